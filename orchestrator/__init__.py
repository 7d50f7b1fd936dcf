"""The Orchestrator: the daemon loop, the next-step state machine, mode and learning context."""
