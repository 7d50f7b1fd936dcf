"""An evaluation run by hand (`make eval-local`): real requests end to end through a daemon.

Not part of `make test`: a case with the local model takes tens of minutes. Only the pure
checklist (`evals.checklist`) is unit-tested.
"""
