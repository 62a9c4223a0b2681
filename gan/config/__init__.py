"""The run configuration: the typed schema, the activation and loss tables, the plan rules of what may be built
together, Hydra composition and the resume policy. Imports no MindSpore."""
