"""Tests of the pcidoc TUI (Pilot, snapshots, responsiveness)."""
