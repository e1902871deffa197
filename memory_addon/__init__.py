"""The Short memory add-on: notes, change sets, proposals, turn context, model tools."""
