"""The Executor served by an external command (a process adapter, SPEC §11)."""

from executor.process.role import ProcessExecutor

__all__ = ["ProcessExecutor"]
