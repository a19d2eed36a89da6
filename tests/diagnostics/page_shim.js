// Runs the inline script of an inspector page under node with a minimal DOM (no browser is
// installed here), paints with every selectable quantity, and prints what the page built.
const fs = require('fs');
const html = fs.readFileSync(process.argv[2], 'utf8');
const data = html.match(/<script type="application\/json" id="capture-data">([\s\S]*?)<\/script>/)[1];
const code = html.match(/<script>([\s\S]*?)<\/script>\s*<\/body>/)[1];
class Element {
  constructor(tag) { this.tag = tag; this.children = []; this.attrs = {}; this.style = {}; this.dataset = {};
    this.className = ''; this.text = ''; this.listeners = {}; this.value = ''; }
  append(...kids) { for (const k of kids) this.children.push(typeof k === 'string' ? {text: k} : k); }
  setAttribute(k, v) { this.attrs[k] = v; if (k.startsWith('data-')) this.dataset[k.slice(5)] = String(v); }
  addEventListener(event, fn) { this.listeners[event] = fn; }
  set textContent(t) { this.text = t; this.children = []; }
  get textContent() { return this.text + this.children.map(c => c.textContent !== undefined ? c.textContent : c.text).join(''); }
}
const byId = {};
for (const id of ['source', 'config', 'stage1', 'stage2', 'stage3', 'stage4', 'replay', 'quantity', 'scale']) byId[id] = new Element('div');
byId['capture-data'] = new Element('script'); byId['capture-data'].text = data;
const walk = (node, out) => { if (node.className !== undefined && node.className.split(' ').includes('tok')) out.push(node);
  for (const c of node.children || []) walk(c, out); return out; };
global.document = {
  getElementById: (id) => byId[id],
  createElement: (tag) => new Element(tag),
  querySelectorAll: (sel) => Object.values(byId).flatMap(n => walk(n, [])),
};
eval(code);
const tokens = document.querySelectorAll('.tok');
const options = byId.quantity.children.map(o => o.attrs.value);
const painted = {};
for (const value of options) {
  byId.quantity.value = value;
  byId.quantity.listeners.change();
  painted[value] = tokens.filter(t => t.style.background && t.style.background !== 'transparent').length;
}
console.log(JSON.stringify({tokens: tokens.length, options, painted, stage4: byId.stage4.textContent,
  replay: byId.replay.textContent, queries: byId.stage1.children[0].children.length - 1}));
