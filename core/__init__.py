"""The floor every app stands on: what the API, the admin and the queue share, and the one base
class of the errors the hub's services raise.

``core`` imports no app (import-linter keeps it so): it holds plumbing, never a rule about
memories, sessions or skills.
"""
