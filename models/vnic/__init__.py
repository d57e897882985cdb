"""Virtual NICs: the ``VirtualNic`` base (``base.py``) and the devices (``devices.py``).

Import from here: ``from models.vnic import VnicParams, VirtualNic, DEVICES, make_vnic``.
"""
from models.vnic.base import DEVICES, VirtualNic, VnicParams
from models.vnic.devices import E1000, VirtioNet, VirtioNetUser, Vmxnet2, Vmxnet3, make_vnic

__all__ = ["DEVICES", "VirtualNic", "VnicParams", "E1000", "Vmxnet2", "Vmxnet3", "VirtioNet",
           "VirtioNetUser", "make_vnic"]
