"""The home's data tables: read, profiled, charted, looked up and computed, with citations."""
