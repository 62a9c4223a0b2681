"""Leaf utilities every other package may use: RNG purposes, atomic writes, bounded reading of untrusted files.
Imports no MindSpore."""
