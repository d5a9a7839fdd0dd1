"""Test doubles kept out of the installed package.

Fake NVML backend, fake probe runner and the misbehaving probe children of the runner tests.
"""
