"""The Executor role: performs one task or tool task and reports a result signal."""
