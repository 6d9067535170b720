"""Importing this module registers every op (each definition module registers its ops on import)."""
from . import tensor, nn, qnn  # noqa: F401
