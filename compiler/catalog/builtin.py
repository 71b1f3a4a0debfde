"""The built-in GPU catalog: facts about NVIDIA data-center GPUs, written as this project's
own data. Each entry says where its facts come from (``source``) and what is not confirmed
(``uncertain``). Bandwidth with ``bandwidth_source=None`` is unsourced on purpose: checks that
depend on it only warn.

Source short names used below:
  MIG-UG    NVIDIA Multi-Instance GPU User Guide (supported GPUs, supported profiles, R470/R525 notes)
  MP-CFG    NVIDIA/mig-parted v0.15.0 default config (device filters, per-profile instance counts)
  NVML-MOCK go-nvml mocks of A100/A30 vendored in mig-parted v0.15.0 (placements)
  LGIP      `nvidia-smi mig -lgip` output pasted into upstream issues/PRs (profile ids, counts)
  PCI-IDS   pci.ids database 2023.04.10 (Debian pci.ids 0.0~2023.04.11-1)
  SMI       `nvidia-smi` output in public repositories (product name, memory.total MiB)
"""

from __future__ import annotations

from functools import cache
from typing import Mapping

from compiler.catalog.model import Catalog, DriverName, GpuModel, GpuVariant, MigGeometry, MigProfile

# Placement starts on 8-memory-slice GPUs (NVML: start = first memory slice). Sourced for A100
# (NVML-MOCK); the same geometry is assumed for Hopper/Blackwell, matching placements seen in
# nvidia-smi output (NVIDIA/DCGM#138: 0:2, 2:1, 3:1, 4:4; dra-driver-nvidia-gpu#933: 0:1, 1:1, 5:1).
_ONE_SLICE = (0, 1, 2, 3, 4, 5, 6)
_DOUBLE = (0, 2, 4, 6)
_TWO = (0, 2, 4)
_THREE = (0, 4)
_WHOLE = (0,)


def _seven_slice(
    one: str,
    one_double: str,
    two: str,
    three: str,
    four: str,
    seven: str,
    *,
    source: str,
    inferred: bool,
    aliases: Mapping[str, tuple[DriverName, ...]] | None = None,
) -> MigGeometry:
    """The common 7-compute/8-memory-slice table; nvidia-smi profile ids 19,20,15,14,9,5,0."""
    aliases = aliases or {}

    def p(name: str, c: int, m: int, n: int, starts: tuple[int, ...], pid: int) -> MigProfile:
        return MigProfile(name, c, m, n, starts, profile_id=pid, driver_names=aliases.get(name, ()))

    return MigGeometry(
        compute_slices=7,
        memory_slices=8,
        max_instances=7,
        profiles=(
            p(one, 1, 1, 7, _ONE_SLICE, 19),
            p(one + "+me", 1, 1, 1, _ONE_SLICE, 20),
            p(one_double, 1, 2, 4, _DOUBLE, 15),
            p(two, 2, 2, 3, _TWO, 14),
            p(three, 3, 4, 2, _THREE, 9),
            p(four, 4, 4, 1, _WHOLE, 5),
            p(seven, 7, 8, 1, _WHOLE, 0),
        ),
        source=source,
        placements_inferred=inferred,
    )


_A30_MIG = MigGeometry(
    compute_slices=4,
    memory_slices=4,
    max_instances=4,
    profiles=(
        MigProfile("1g.6gb", 1, 1, 4, (0, 1, 2, 3)),
        MigProfile("1g.6gb+me", 1, 1, 1, (0, 1, 2, 3), min_driver=470),
        MigProfile("2g.12gb", 2, 2, 2, (0, 2)),
        MigProfile("2g.12gb+me", 2, 2, 1, (0, 2), min_driver=525),
        MigProfile("4g.24gb", 4, 4, 1, (0,)),
    ),
    source="MIG-UG A30 profile table (counts, R470/R525 notes); MP-CFG; placements NVML-MOCK a30",
)

_RTX_PRO_6000_MIG = MigGeometry(
    compute_slices=4,
    memory_slices=4,
    max_instances=4,
    profiles=(
        MigProfile("1g.24gb", 1, 1, 4, (0, 1, 2, 3), profile_id=14),
        MigProfile("1g.24gb+me", 1, 1, 1, (0, 1, 2, 3), profile_id=21),
        MigProfile("1g.24gb+gfx", 1, 1, 4, (0, 1, 2, 3), profile_id=47),
        MigProfile("1g.24gb+me.all", 1, 1, 1, (0, 1, 2, 3), profile_id=65),
        MigProfile("1g.24gb-me", 1, 1, 4, (0, 1, 2, 3), profile_id=67),
        MigProfile("2g.48gb", 2, 2, 2, (0, 2), profile_id=5),
        MigProfile("2g.48gb+gfx", 2, 2, 2, (0, 2), profile_id=35),
        MigProfile("2g.48gb+me.all", 2, 2, 1, (0, 2), profile_id=64),
        MigProfile("2g.48gb-me", 2, 2, 2, (0, 2), profile_id=66),
        MigProfile("4g.96gb", 4, 4, 1, (0,)),
        MigProfile("4g.96gb+gfx", 4, 4, 1, (0,)),
    ),
    source="MP-CFG (all-* counts, all-balanced device filter 0x2BB5); LGIP (bigstack-oss/cubecos#312, "
    "GoogleCloudPlatform/container-engine-accelerators#564)",
    placements_inferred=True,
)

_A100_80_ALIASES = {
    "3g.40gb": (DriverName("3g.39gb", (535, 545), "NVIDIA/mig-parted#31 (A100-SXM4-80GB on 535.x/545.x)"),),
    "7g.80gb": (
        DriverName("7g.79gb", (), "NVIDIA/gpu-operator#351 (A100-SXM4-80GB, 2022; branch not recorded)"),
    ),
}
_GB200_ALIASES = {
    "1g.23gb": (DriverName("1g.24gb", (), "pre-production HGX GB200, NVIDIA/gpu-operator#1303, mig-parted#228"),),
    "1g.23gb+me": (DriverName("1g.24gb+me", (), "pre-production HGX GB200, NVIDIA/gpu-operator#1303"),),
}

_HOPPER_80_MIG_SOURCE = "MP-CFG (80GB filter); LGIP H100 80GB (jbarrow.ai field notes); GPU Operator MIG label dump"

_MODELS: tuple[GpuModel, ...] = (
    GpuModel(
        id="a30",
        display_name="NVIDIA A30 24GB",
        architecture="Ampere",
        compute_capability="8.0",
        memory_gib=24,
        memory_mib=None,
        memory_bandwidth_gbps=933,
        bandwidth_source=None,
        variants=(
            GpuVariant("0x20B710DE", "PCIe", "NVIDIA A30", note="GFD label NVIDIA-A30 seen in third-party docs"),
        ),
        mig=_A30_MIG,
        source="PCI-IDS 20b7 'A30 PCIe'; MP-CFG filter 0x20B710DE; MIG-UG supported GPUs (CC 8.0, 24GB, 4 instances)",
        uncertain=("933 GB/s is the commonly cited datasheet figure, not found in a source here",
                   "NVML memory.total MiB not seen"),
    ),
    GpuModel(
        id="a100-40gb",
        display_name="NVIDIA A100 40GB",
        architecture="Ampere",
        compute_capability="8.0",
        memory_gib=40,
        memory_mib=40960,
        memory_bandwidth_gbps=1555,
        bandwidth_source="NVIDIA A100 datasheet as cited by glennklockwood.com/garden/processors/A100",
        variants=(
            GpuVariant("0x20B010DE", "SXM4", "NVIDIA A100-SXM4-40GB"),
            GpuVariant("0x20B110DE", "PCIe", None, note="pci.ids 'A100 PCIe 40GB'; NVML string not seen"),
            GpuVariant("0x20F110DE", "PCIe", "NVIDIA A100-PCIE-40GB"),
            GpuVariant("0x20F610DE", "PCIe (A800 40GB)", None),
        ),
        mig=_seven_slice(
            "1g.5gb", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb",
            source="MP-CFG (all-* counts, 40GB filter for all-1g.10gb=4); MIG-UG A100 table; placements NVML-MOCK a100",
            inferred=False,
        ),
        source="PCI-IDS 20b0/20b1/20f1/20f6; names SMI + NVIDIA/k8s-device-plugin#720 + dra-driver-nvidia-gpu "
        "resourceslice-attributes doc; 40960 MiB SMI",
        uncertain=("nvidia-smi profile ids assumed from the scheme seen on H100/H200 lgip output",),
    ),
    GpuModel(
        id="a100-80gb",
        display_name="NVIDIA A100 80GB",
        architecture="Ampere",
        compute_capability="8.0",
        memory_gib=80,
        memory_mib=81920,
        memory_bandwidth_gbps=2039,
        bandwidth_source="NVIDIA A100 datasheet (SXM4) as cited by glennklockwood.com/garden/processors/A100",
        variants=(
            GpuVariant("0x20B210DE", "SXM4", "NVIDIA A100-SXM4-80GB"),
            GpuVariant("0x20B510DE", "PCIe", "NVIDIA A100 80GB PCIe", memory_bandwidth_gbps=1935,
                       note="GFD label NVIDIA-A100-80GB-PCIe (gpu-operator#603)"),
            GpuVariant("0x20F310DE", "SXM4 (A800)", None),
            GpuVariant("0x20F510DE", "PCIe (A800 80GB)", None),
        ),
        mig=_seven_slice(
            "1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb",
            source="MP-CFG (80GB filter); MIG-UG A100-SXM4-80GB names; placements NVML-MOCK a100",
            inferred=False,
            aliases=_A100_80_ALIASES,
        ),
        source="PCI-IDS 20b2/20b5/20f3/20f5; names SMI (mig-parted#31, go-dcgm#30, HAMi#1847); 81920 MiB SMI on "
        "545/590 drivers (81251 MiB on 495, mig-parted#31)",
        uncertain=("PCIe 1935 GB/s is the datasheet figure as recalled, unsourced here",
                   "4g.40gb may also be reported as 4g.39gb on 535/545 (same memory as 3g.40gb); not seen"),
    ),
    GpuModel(
        id="h100-80gb",
        display_name="NVIDIA H100 80GB",
        architecture="Hopper",
        compute_capability="9.0",
        memory_gib=80,
        memory_mib=81559,
        memory_bandwidth_gbps=3350,
        bandwidth_source="AnandTech 'NVIDIA Announces H100 NVL' spec table (H100 SXM 3.35TB/s)",
        variants=(
            GpuVariant("0x233010DE", "SXM5", "NVIDIA H100 80GB HBM3"),
            GpuVariant("0x233110DE", "PCIe", "NVIDIA H100 PCIe", memory_bandwidth_gbps=2000,
                       bandwidth_source="NVIDIA H100 PCIe product brief PB-11133-001_v02 ('greater than 2,000 GBps')"),
            GpuVariant("0x232210DE", "PCIe (H800)", None),
            GpuVariant("0x232410DE", "SXM (H800)", None),
        ),
        mig=_seven_slice(
            "1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb",
            source=_HOPPER_80_MIG_SOURCE, inferred=True,
        ),
        source="PCI-IDS 2330/2331/2322/2324; names GPU Operator MIG docs + dra-driver-nvidia-gpu#897; 81559 MiB = "
        "nvidia.com/gpu.memory on an H100 80GB HBM3 node (GPU Operator docs label dump)",
        uncertain=("81559 MiB seen for SXM5 only",),
    ),
    GpuModel(
        id="h100-nvl",
        display_name="NVIDIA H100 NVL 94GB",
        architecture="Hopper",
        compute_capability="9.0",
        memory_gib=94,
        memory_mib=95830,
        memory_bandwidth_gbps=3900,
        bandwidth_source="AnandTech 'NVIDIA Announces H100 NVL' spec table (2 x 3.9TB/sec)",
        variants=(
            GpuVariant("0x232110DE", "PCIe (NVL)", "NVIDIA H100 NVL"),
            GpuVariant("0x233A10DE", "PCIe (H800 NVL)", None),
        ),
        mig=_seven_slice(
            "1g.12gb", "1g.24gb", "2g.24gb", "3g.47gb", "4g.47gb", "7g.94gb",
            source="MP-CFG (all-balanced filter 0x2321/0x233A); LGIP NVIDIA/gpu-operator#900", inferred=True,
        ),
        source="MP-CFG filters; name akash-network/provider-configs#91 + SMI; 95830 MiB SMI",
        uncertain=("one third-party page lists 4.8 TB/s (conflicts with 3.9 TB/s)",),
    ),
    GpuModel(
        id="h200",
        display_name="NVIDIA H200 141GB",
        architecture="Hopper",
        compute_capability="9.0",
        memory_gib=141,
        memory_mib=143771,
        memory_bandwidth_gbps=4800,
        bandwidth_source="third-party H100 vs H200 comparisons (H200 4.8 TB/s)",
        variants=(
            GpuVariant("0x233510DE", "SXM5", "NVIDIA H200"),
            GpuVariant("0x233B10DE", "PCIe (NVL)", "NVIDIA H200 NVL"),
        ),
        mig=_seven_slice(
            "1g.18gb", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb",
            source="MP-CFG (H200 filters); LGIP NVIDIA/mig-parted#120", inferred=True,
        ),
        source="PCI ids from MP-CFG filters and mig-parted#120; names and 143771 MiB SMI (H200 and H200 NVL)",
        uncertain=("the static mig-parted all-1g.35gb entry filters only 0x2335, not H200 NVL 0x233B",),
    ),
    GpuModel(
        id="gh200",
        display_name="NVIDIA GH200 96GB (Grace Hopper)",
        architecture="Hopper",
        compute_capability="9.0",
        memory_gib=96,
        memory_mib=97871,
        memory_bandwidth_gbps=4000,
        bandwidth_source="third-party GH200 announcement write-up (96GB HBM3 at 4 TB/s)",
        variants=(
            GpuVariant("0x234210DE", "Superchip", "NVIDIA GH200 480GB"),
            GpuVariant("0x234210DE", "Superchip", "NVIDIA GH200 96GB HBM3"),
            GpuVariant("0x234210DE", "Superchip", "NVIDIA GH200 120GB"),
        ),
        mig=_seven_slice(
            "1g.12gb", "1g.24gb", "2g.24gb", "3g.48gb", "4g.48gb", "7g.96gb",
            source="MP-CFG (96GB filter: H100-96GB, PG506-96GB, GH200, H20); dra-driver-nvidia-gpu demo mig-1g-12gb",
            inferred=True,
        ),
        source="names and 97871 MiB SMI; 'NVIDIA GH200 96GB HBM3' in the dra-driver-nvidia-gpu demo",
        uncertain=("PCI id 0x2342 attributed to GH200 from mig-parted's combined 96GB filter; per-id mapping "
                   "not confirmed", "nvidia-smi profile ids assumed"),
    ),
    GpuModel(
        id="gh200-144gb",
        display_name="NVIDIA GH200 144GB HBM3e",
        architecture="Hopper",
        compute_capability="9.0",
        memory_gib=144,
        memory_mib=None,
        memory_bandwidth_gbps=4900,
        bandwidth_source=None,
        variants=(GpuVariant("0x234810DE", "Superchip", "NVIDIA GH200 144G HBM3e",
                             note="string from the mig-parted comment, not from nvidia-smi"),),
        mig=_seven_slice(
            "1g.18gb", "1g.36gb", "2g.36gb", "3g.72gb", "4g.72gb", "7g.144gb",
            source="MP-CFG (filter 0x2348); LGIP NVIDIA/mig-parted#139, NVIDIA/gpu-operator#1057", inferred=True,
        ),
        source="MP-CFG all-balanced filter 0x234810DE",
        uncertain=("product name unconfirmed", "bandwidth: only '~5 TB/s' in a third-party page"),
    ),
    GpuModel(
        id="b200",
        display_name="NVIDIA B200 180GB",
        architecture="Blackwell",
        compute_capability="10.0",
        memory_gib=180,
        memory_mib=183359,
        memory_bandwidth_gbps=8000,
        bandwidth_source="glennklockwood.com/garden/processors/B200 and Vultr hardware overview (8 TB/s)",
        variants=(GpuVariant("0x290110DE", "SXM", "NVIDIA B200"),),
        mig=_seven_slice(
            "1g.23gb", "1g.45gb", "2g.45gb", "3g.90gb", "4g.90gb", "7g.180gb",
            source="MP-CFG (filter 0x2901); LGIP NVIDIA/mig-parted#166, #187", inferred=True,
        ),
        source="MP-CFG filter 0x290110DE (gpu-operator#1242); name and 183359 MiB NVIDIA/gpu-operator#2155",
        uncertain=("MIG profile memory changed between drivers (1g.23gb 22.00 -> 20.50 GiB); names unchanged",),
    ),
    GpuModel(
        id="gb200",
        display_name="NVIDIA GB200 (Grace Blackwell) 186GB",
        architecture="Blackwell",
        compute_capability="10.0",
        memory_gib=186,
        memory_mib=None,
        memory_bandwidth_gbps=None,
        bandwidth_source=None,
        variants=(GpuVariant("0x294110DE", "Superchip", "NVIDIA GB200"),),
        mig=_seven_slice(
            "1g.23gb", "1g.47gb", "2g.47gb", "3g.93gb", "4g.93gb", "7g.186gb",
            source="MP-CFG (filter 0x2941); LGIP NVIDIA/mig-parted#227; PR mig-parted#228", inferred=True,
            aliases=_GB200_ALIASES,
        ),
        source="MP-CFG filter 0x294110DE; name from NVIDIA/k8s-test-infra nvml-mock gb200 profile; MIG-UG 186GB",
        uncertain=("product name medium confidence", "bandwidth unknown",
                   "static all-3g.95gb/4g.95gb/7g.189gb entries may be older GB200 names (unattributed)"),
    ),
    GpuModel(
        id="rtx-pro-6000",
        display_name="NVIDIA RTX PRO 6000 Blackwell Server Edition 96GB",
        architecture="Blackwell",
        compute_capability="12.0",
        memory_gib=96,
        memory_mib=None,
        memory_bandwidth_gbps=1792,
        bandwidth_source=None,
        variants=(GpuVariant("0x2BB510DE", "PCIe", "NVIDIA RTX PRO 6000 Blackwell Server Edition"),),
        mig=_RTX_PRO_6000_MIG,
        source="MP-CFG all-balanced filter 0x2BB510DE; MIG-UG supported GPUs (CC 12.0, 96GB, 4 instances)",
        uncertain=("product name medium confidence", "placements inferred from A30's 4-slice table",
                   "1792 GB/s unsourced here"),
    ),
    GpuModel(
        id="l4",
        display_name="NVIDIA L4 24GB",
        architecture="Ada Lovelace",
        compute_capability="8.9",
        memory_gib=24,
        memory_mib=23034,
        memory_bandwidth_gbps=300,
        bandwidth_source="NVIDIA L4 datasheet (300 GB/s), corroborated by third-party spec pages",
        variants=(GpuVariant("0x27B810DE", "PCIe", "NVIDIA L4"),),
        mig=None,
        source="PCI-IDS 27b8 'AD104GL [L4]'; name and 23034 MiB SMI; no MIG (not in MIG-UG supported GPUs)",
    ),
    GpuModel(
        id="l40s",
        display_name="NVIDIA L40S 48GB",
        architecture="Ada Lovelace",
        compute_capability="8.9",
        memory_gib=48,
        memory_mib=46068,
        memory_bandwidth_gbps=864,
        bandwidth_source="NVIDIA L40S datasheet (864 GB/s), corroborated by third-party spec pages",
        variants=(GpuVariant("0x26B910DE", "PCIe", "NVIDIA L40S"),),
        mig=None,
        source="name and 46068 MiB SMI; no MIG (not in MIG-UG supported GPUs; vendor spec pages)",
        uncertain=("PCI id 0x26B9 not in pci.ids 2023.04.10; taken from the NVIDIA brief given to the project",),
    ),
)


@cache
def builtin_catalog() -> Catalog:
    return Catalog.of(_MODELS)
