"""The Communicator role: the only code that speaks to the user (SPEC §10.7)."""
