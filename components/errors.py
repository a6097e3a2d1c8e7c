"""The one base class for component arguments that cannot be built.

Each cloud's components raise their own subclass, with a message naming the component, the
field, the value and what is allowed, before anything registers. The stack program turns any
of them into a clean stop (no traceback) without importing the cloud modules to know them.
"""


class ComponentArgsError(ValueError):
    """Component arguments that cannot be built."""
