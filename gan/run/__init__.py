"""The run folder: its file names and records, the lock and status, sample grids, the TensorBoard writer. Imports no
MindSpore."""
