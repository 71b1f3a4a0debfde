"""The policy language (SPEC §4) as pydantic models; ``schemas/`` is generated from these."""

from compiler.model.common import API_VERSION
from compiler.model.fleet import Cluster, Department, FleetFile, NodePool
from compiler.model.team import Budget, ServingDeployment, TeamFile

__all__ = [
    "API_VERSION",
    "Budget",
    "Cluster",
    "Department",
    "FleetFile",
    "NodePool",
    "ServingDeployment",
    "TeamFile",
]
