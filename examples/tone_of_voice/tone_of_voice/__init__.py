"""Tone of voice: an example add-on for the memory host (see docs/addons.md).

The package holds no code the host runs: the host reads manifest.json and the files
next to it.
"""
