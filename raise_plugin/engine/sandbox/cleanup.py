"""Removing a folder a program wrote in, whatever it made there, without recursion: a program can
make its folder as deep as it likes (``shutil.rmtree`` recurses once per level, and 3000 levels
raise ``RecursionError`` in the worker and then in the engine), paths too long to name, and
folders it cannot write into. Each folder met is moved up to the top one, under a name of its
own, before it is emptied: the work is a loop over a list, with two descriptors open at most."""
from __future__ import annotations

import os
import stat

__all__ = ["remove_tree"]

_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def remove_tree(path: str) -> bool:
    """Remove ``path`` and everything beneath it; whether it is gone. Never raises."""
    try:
        top = os.open(path, _DIRECTORY)
    except FileNotFoundError:
        return True
    except OSError:  # a file or a link where a folder was expected
        try:
            os.unlink(path)
        except OSError:
            pass
        return not os.path.lexists(path)
    try:
        _empty(top)
    except OSError:
        pass
    finally:
        os.close(top)
    try:
        os.rmdir(path)
    except OSError:
        pass
    return not os.path.lexists(path)


def _empty(top: int) -> None:
    """Empty the folder open as ``top``: files are removed, folders moved up into it and emptied in turn."""
    pending: list[str | None] = [None]  # folders in `top` still to empty; None is `top` itself
    moved = 0
    while pending:
        name = pending.pop()
        folder = top if name is None else os.open(name, _DIRECTORY, dir_fd=top)
        try:
            try:
                os.fchmod(folder, stat.S_IRWXU)  # one its program made unwritable (it is this user's)
            except OSError:
                pass
            with os.scandir(folder) as entries:
                found = [(entry.name, entry.is_dir(follow_symlinks=False)) for entry in entries]
            for entry, is_folder in found:
                if not is_folder:
                    os.unlink(entry, dir_fd=folder)
                    continue
                if name is None:  # already in `top`
                    pending.append(entry)
                    continue
                moved, target = _free_name(top, moved)
                os.rename(entry, target, src_dir_fd=folder, dst_dir_fd=top)
                pending.append(target)
        finally:
            if folder != top:
                os.close(folder)
        if name is not None:
            os.rmdir(name, dir_fd=top)


def _free_name(top: int, count: int) -> tuple[int, str]:
    """The next name ``.removing-N`` not taken in ``top`` (a program may have made one)."""
    while True:
        count += 1
        target = f".removing-{count}"
        try:
            os.stat(target, dir_fd=top, follow_symlinks=False)
        except FileNotFoundError:
            return count, target
