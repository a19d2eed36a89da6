"""Tools that drive or estimate whole steps: the step inspector (inspector.py, capture.py,
replay.py, html.py), the gradient noise's dependence on G (group_size.py) and the memory estimator
(memory_estimate.py, memory_model.py). They sit above engine/; what the step itself reads while it
runs is in meters/.
"""
