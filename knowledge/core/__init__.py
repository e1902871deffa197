"""Pure knowledge logic (formats, scanning, extraction, chunking, fusion, blocks): no Django."""
