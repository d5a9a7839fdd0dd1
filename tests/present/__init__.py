"""Tests of the headless presenters (pcidoc.present) and topology notes."""
