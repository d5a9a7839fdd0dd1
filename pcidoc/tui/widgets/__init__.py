"""Widgets of the pcidoc TUI, one per module."""
