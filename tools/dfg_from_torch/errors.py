"""Exit codes (README's table) and the exceptions that carry them."""

EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_USAGE = 2
EXIT_INPUT = 3      # untraceable model, bad model file, bad input naming
EXIT_IO = 4
EXIT_GPU = 7


class ExportError(Exception):
    """An error with an exit code and a one-line message."""

    code = EXIT_INTERNAL

    def __init__(self, message, code=None):
        super().__init__(message)
        if code is not None:
            self.code = code


class UsageError(ExportError):
    code = EXIT_USAGE


class TraceError(ExportError):
    """The model cannot be captured: names the op (or the source line) and the reason."""

    code = EXIT_INPUT


class IOFailure(ExportError):
    code = EXIT_IO


class NoCuda(ExportError):
    code = EXIT_GPU
