"""Guest OS profiles (configs/guest/, models/guest.py): costs, virtualization mode, windows.

Receive-window mechanism (claim E35-win-rx-socket): a stack without RFC 1323 window scaling
(Windows Server 2003 as configured) advertises at most 65535 bytes whatever its socket size, and
a connection scales only when both ends do, so a Windows VM's peer is capped as well.
"""
from pathlib import Path

import pytest
import simpy

from models.base import DATA, Burst
from models.guest import GuestParams, OsStackParams
from models.tcp import TcpParams, TcpReceiver
from tests.conftest import CONFIG_DIR

PROFILES = sorted(p.stem for p in Path(CONFIG_DIR, "guest").glob("*.yaml"))
MSS = 1448


def test_the_four_profiles_exist():
    assert {"rhel5_64", "rhel6", "win2003_32", "win2003_64"} <= set(PROFILES)


@pytest.fixture(scope="module")
def guests(compose):
    return {n: compose([f"guest={n}"]).guest for n in PROFILES}


def test_modes_and_lro(guests):
    assert guests["win2003_32"].virtualization == "bt"
    assert {guests[n].virtualization for n in ("win2003_64", "rhel5_64", "rhel6")} == {"hw"}
    assert guests["rhel6"].lro and not guests["win2003_64"].lro


def test_priors_direction_windows_receives_dearer(guests):
    # E35-rx-std-windows: Windows' receive path costs more per packet than Linux's.
    lin, win = guests["rhel5_64"].stack, guests["win2003_64"].stack
    assert win.rx_data.per_packet_cycles > lin.rx_data.per_packet_cycles
    assert win.recv_call.fixed_cycles > lin.recv_call.fixed_cycles
    assert not win.window_scaling and lin.window_scaling


def test_virtualization_mode_is_validated():
    with pytest.raises(ValueError, match="virtualization='pv'"):
        GuestParams(virtualization="pv")


def test_max_window_without_scaling():
    assert OsStackParams(window_scaling=True).max_window_bytes() is None
    assert OsStackParams(window_scaling=True).max_window_bytes(peer_scales=False) == 65535
    assert OsStackParams(window_scaling=False).max_window_bytes() == 65535


def test_receiver_never_advertises_more_than_its_cap():
    env, acks = simpy.Environment(), []
    r = TcpReceiver(env, 0, TcpParams(), mss_bytes=MSS, rcvbuf_bytes=131072, src=1, dst=2,
                    emit=acks.append, max_window_bytes=65535)
    assert r.window() == 65535
    r.on_data(Burst(DATA, 0, 10 * MSS, 10, 10, 52, MSS, seq=0, psh=True))
    assert acks[-1].window_bytes == 65535          # 131072 - 14480 free, capped
    r.read(10 * MSS)
    plain = TcpReceiver(env, 0, TcpParams(), mss_bytes=MSS, rcvbuf_bytes=131072, src=1, dst=2,
                        emit=acks.append)
    assert plain.window() == 131072
