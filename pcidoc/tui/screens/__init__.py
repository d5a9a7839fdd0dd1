"""Screens of the pcidoc TUI: the main screen and its dialogs."""
