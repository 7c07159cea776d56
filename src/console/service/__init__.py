"""The sweep engine as a service the console talks to: named commands, and the engine in its own process.

``commands`` holds what the engine side does for each command (shared by the in-process thread and
the engine process); ``wire`` the framing between the two processes; ``host`` the engine process's
main; ``client`` the console's end of it.
"""
