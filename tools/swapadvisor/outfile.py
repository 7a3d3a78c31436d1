"""Writing an output file the way the C tools do (lib/core/sa_io.c): a regular file is
replaced atomically (written to a temporary file in its folder, then renamed over it),
keeping its mode and its hard links; a device, a FIFO, /dev/stdout or a dangling symlink
is written in place (renaming over it would replace the device or the link); any other
symlink is followed, so the file it names is replaced and the link stays."""

import os
import stat
import tempfile

from .errors import IOFailure


def model_file(model):
    """The file a MODEL argument reads (FILE.py:FUNC), or None (torchvision:NAME)."""
    if model is None or model.startswith("torchvision:") or ":" not in model:
        return None
    return model.rsplit(":", 1)[0]


def input_named(output, inputs):
    """The first of inputs that output names as well (the same regular file, by device and
    inode: another name or a hard link counts), or None; "-" and missing files never match.
    A tool refuses such an output before writing anything (it would destroy its input)."""
    if not output or output == "-":
        return None
    try:
        o = os.stat(output)
    except OSError:
        return None
    if "-" in inputs:
        # /dev/stdin, /dev/fd/0, /proc/self/fd/0 or the file stdin was redirected from
        try:
            s0 = os.fstat(0)
            if (stat.S_ISREG(s0.st_mode) or stat.S_ISFIFO(s0.st_mode)) and \
                    (s0.st_dev, s0.st_ino) == (o.st_dev, o.st_ino):
                return "- (stdin)"
        except OSError:
            pass
    if not stat.S_ISREG(o.st_mode):
        return None
    for i in inputs:
        if not i or i == "-":
            continue
        try:
            s = os.stat(i)
        except OSError:
            continue
        if (s.st_dev, s.st_ino) == (o.st_dev, o.st_ino):
            return i
    return None


def _direct(path, write):
    try:
        with open(path, "wb") as f:
            write(f)
    except OSError as e:
        raise IOFailure("cannot write %s: %s" % (path, e.strerror or e))


def write_output(path, write):
    """Calls write(f) with f a binary file object open on path's replacement (see above);
    a failure leaves path as it was and no temporary file behind."""
    target = path
    if os.path.islink(path):
        if path.startswith("/dev/") or path.startswith("/proc/"):
            return _direct(path, write)
        real = os.path.realpath(path)
        if not os.path.exists(real):
            return _direct(path, write)
        target = real
    try:
        st = os.stat(target)
    except FileNotFoundError:
        st = None
    except OSError as e:
        raise IOFailure("cannot write %s: %s" % (path, e.strerror or e))
    if st is not None and not stat.S_ISREG(st.st_mode):
        if stat.S_ISDIR(st.st_mode):
            raise IOFailure("cannot write %s: it is a directory" % path)
        return _direct(target, write)
    d = os.path.dirname(os.path.abspath(target))
    if not os.path.isdir(d):
        raise IOFailure("cannot write %s: no such directory %s" % (path, d))
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(target) + ".", suffix=".tmp", dir=d)
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        if st is not None and st.st_nlink > 1:
            # other names share the file: rewrite it in place so they see the new contents
            with open(tmp, "rb") as src, open(target, "wb") as dst:
                while True:
                    b = src.read(1 << 20)
                    if not b:
                        break
                    dst.write(b)
            return
        if st is not None:
            mode = stat.S_IMODE(st.st_mode)
        else:
            um = os.umask(0)
            os.umask(um)
            mode = 0o666 & ~um
        os.chmod(tmp, mode)
        os.replace(tmp, target)
        tmp = None
    except OSError as e:
        raise IOFailure("cannot write %s: %s" % (path, e.strerror or e))
    finally:
        if tmp is not None and os.path.exists(tmp):
            try:
                os.unlink(tmp)
            except OSError:
                pass


def write_stdout(text):
    """Writes text (str, or bytes as they are) to standard output; a closed or broken stdout
    is an I/O error (exit 4)."""
    import sys
    if sys.stdout is None:
        raise IOFailure("cannot write to stdout: it is closed")
    try:
        if isinstance(text, bytes):
            sys.stdout.flush()
            sys.stdout.buffer.write(text)
            sys.stdout.buffer.flush()
        else:
            sys.stdout.write(text)
            sys.stdout.flush()
    except (OSError, ValueError) as e:
        raise IOFailure("cannot write to stdout: %s" % (getattr(e, "strerror", None) or e))
