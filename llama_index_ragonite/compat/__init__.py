"""The one boundary for other libraries' internals: a module per library whose private names we read.

Why: a private name can change in any release of its library, and a read spread over the package fails
somewhere far from its cause. Each module here names what it reads, why no public route does it, and
the versions it was checked on; ``tests/test_compat.py`` fails, naming the library, its version and
the name, when an installed version changes one. ``tests/test_layout.py`` keeps every other module off
other libraries' private names. Base-level: importable from every stage; this ``__init__`` imports
nothing, and each module imports its library only where it is used.
"""
