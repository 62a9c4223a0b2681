"""Offline readers and viewers of run folders: dead-channel statistics, runs and sweeps, charts, the dashboard.
Imports no MindSpore."""
