"""rlvr parts plugged into other tools: TRL reward functions, trackers, Ray.

Each module imports its third-party package only when used, so ``import rlvr`` stays light and a
missing optional package is reported as a UserError that names the install command.
See docs/integrations.md.
"""
