"""Writes of the learning app: rules (M13), reference files (M14), clean-up (M12)."""
