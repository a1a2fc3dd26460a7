"""A PEP 517 build backend for the gpucc module, standard library only:
the wheel is the gpucc package's .py files and the dist-info metadata, so
`pip install ./python` needs neither network nor setuptools."""

import base64
import hashlib
import io
import os
import tarfile
import zipfile

NAME, VERSION = "gpucc", "0.1.0"
HERE = os.path.dirname(os.path.abspath(__file__))
TAG = "py3-none-any"


def _metadata():
    with open(os.path.join(HERE, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    return ("Metadata-Version: 2.1\nName: %s\nVersion: %s\n"
            "Summary: Author tensor graphs in Python and run them on gpucc\n"
            "Requires-Python: >=3.8\nDescription-Content-Type: text/markdown\n\n%s" % (NAME, VERSION, readme))


def _sources():
    pkg = os.path.join(HERE, NAME)
    for name in sorted(os.listdir(pkg)):
        if name.endswith(".py"):
            yield "%s/%s" % (NAME, name), os.path.join(pkg, name)


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    di = "%s-%s.dist-info" % (NAME, VERSION)
    os.makedirs(os.path.join(metadata_directory, di), exist_ok=True)
    with open(os.path.join(metadata_directory, di, "METADATA"), "w", encoding="utf-8") as f:
        f.write(_metadata())
    return di


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    di = "%s-%s.dist-info" % (NAME, VERSION)
    wheel = "%s-%s-%s.whl" % (NAME, VERSION, TAG)
    files = [(arc, open(path, "rb").read()) for arc, path in _sources()]
    files.append((di + "/METADATA", _metadata().encode()))
    files.append((di + "/WHEEL", ("Wheel-Version: 1.0\nGenerator: gpucc_build\nRoot-Is-Purelib: true\nTag: %s\n" % TAG).encode()))
    record = []
    with zipfile.ZipFile(os.path.join(wheel_directory, wheel), "w", zipfile.ZIP_DEFLATED) as z:
        for arc, data in files:
            z.writestr(zipfile.ZipInfo(arc, (2020, 1, 1, 0, 0, 0)), data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.append("%s,sha256=%s,%d" % (arc, digest, len(data)))
        record.append(di + "/RECORD,,")
        z.writestr(zipfile.ZipInfo(di + "/RECORD", (2020, 1, 1, 0, 0, 0)), "\n".join(record) + "\n")
    return wheel


def build_sdist(sdist_directory, config_settings=None):
    base = "%s-%s" % (NAME, VERSION)
    out = base + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, out), "w:gz") as t:
        for rel in ["pyproject.toml", "gpucc_build.py", "README.md"] + [arc for arc, _ in _sources()]:
            t.add(os.path.join(HERE, rel), arcname="%s/%s" % (base, rel))
        info = _metadata().encode()
        ti = tarfile.TarInfo("%s/PKG-INFO" % base)
        ti.size = len(info)
        t.addfile(ti, io.BytesIO(info))
    return out
