"""The engine: Python source -> abstract values, graph nodes and events. No pygls, no torch."""
