"""pcidoc: a doctor for GPU interconnects.

The package is layered (see docs/architecture.md): ``model`` holds pure data, ``collect``
gathers facts, ``probes`` measure, ``doctor`` diagnoses, ``present`` renders and ``tui`` is the
interactive front end. Importing this package imports nothing heavy.
"""

__version__ = "0.1.0"
