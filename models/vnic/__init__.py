"""Virtual NICs: the ``VirtualNic`` base (``base.py``), the devices (``devices.py``) and the
direct devices a guest drives itself (``direct.py``: passthrough, SR-IOV).

Import from here: ``from models.vnic import VnicParams, VirtualNic, DEVICES, make_vnic``.
"""
from models.vnic.base import DEVICES, VirtualNic, VnicParams
from models.vnic.devices import E1000, VirtioNet, VirtioNetUser, Vmxnet2, Vmxnet3, make_vnic
from models.vnic.direct import DirectNic, Passthrough, Sriov, is_direct

__all__ = ["DEVICES", "VirtualNic", "VnicParams", "E1000", "Vmxnet2", "Vmxnet3", "VirtioNet",
           "VirtioNetUser", "make_vnic", "DirectNic", "Passthrough", "Sriov", "is_direct"]
