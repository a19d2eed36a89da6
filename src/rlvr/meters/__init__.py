"""Meters the training step reads while it runs: the gradient noise scale from its micro-batches
(grad_noise.py), measured memory by component (memory.py) and the reward-hacking monitor
(hacking.py). They import nothing of engine/; the tools that drive whole steps (inspect,
grad-variance, the memory estimator) live in diagnostics/, above engine/.
"""
