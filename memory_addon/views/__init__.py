"""The memory add-on's htmx pages, one module per section."""
