"""Diagnostics of one update and of the gradient: the step inspector (inspector.py, replay.py,
html.py), the gradient noise scale (grad_noise.py) and its dependence on G (group_size.py).

Kept import-light: train/loop.py imports grad_noise, and grad_noise imports nothing of train/.
"""
