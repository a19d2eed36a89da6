"""Diagnostics of a run: memory accounting and estimation (memory*.py), the step inspector
(inspector.py, replay.py, html.py), the gradient noise scale (grad_noise.py) and its dependence on
G (group_size.py), and the reward-hacking monitor (hacking.py).

Kept import-light: train/loop.py imports memory and grad_noise, which import nothing of train/.
"""
