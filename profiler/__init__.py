"""The λG language: syntax, parser, type/region/world checker and cost semantics."""
