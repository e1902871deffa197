"""Every write of the memory add-on: one transaction each, events after commit."""
