"""Starter environments, written against freesolo.* as Flash scaffolds them."""
