"""Dashboard sessions: signed cookies that name a grant, expire, and carry the CSRF token."""

from __future__ import annotations

import pytest

from memory_core.config.policies import TierPolicy
from memory_core.domain.models import Tier
from server.http.auth import Grant, TokenAuthority
from server.http.dashboard.access import DashboardAccess, Visitor
from server.http.dashboard.chart import age_bars, tier_bands, tier_of_day
from server.http.throttle import AuthThrottle

ADMIN = Grant(name="admin", token="admin-token-0123456789abcdef")
ALPHA = Grant(
    name="alpha", token="alpha-token-0123456789abcdef", projects=("alpha",), read_only=True
)


class Clock:
    def __init__(self) -> None:
        self.t = 1_000_000.0

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def access(clock: Clock) -> DashboardAccess:
    return DashboardAccess(TokenAuthority((ADMIN, ALPHA)), secret=b"k" * 32, now=clock)


def test_a_token_becomes_a_session_naming_its_grant_never_the_token(access: DashboardAccess):
    visitor = access.sign_in(ALPHA.token)
    assert visitor is not None and visitor.name == "alpha"
    cookie = access.cookie(visitor)
    assert ALPHA.token not in cookie
    back = access.read(cookie)
    assert back == visitor
    assert back.may_see("alpha") and not back.may_see("beta") and not back.may_change
    assert access.sign_in("not-a-known-token-at-all") is None


def test_each_sign_in_gets_a_new_csrf_token(access: DashboardAccess):
    first, second = access.sign_in(ADMIN.token), access.sign_in(ADMIN.token)
    assert first is not None and second is not None and first.csrf != second.csrf
    assert access.csrf_matches(first, first.csrf)
    assert not access.csrf_matches(first, second.csrf)
    assert not access.csrf_matches(first, None)
    assert not access.csrf_matches(first, "")


def test_forged_tampered_or_expired_cookies_are_no_session(access: DashboardAccess, clock: Clock):
    visitor = access.sign_in(ALPHA.token)
    assert visitor is not None
    cookie = access.cookie(visitor)
    payload, signature = cookie.rsplit(".", 1)
    admin = access.sign_in(ADMIN.token)
    assert admin is not None
    admin_payload = access.cookie(admin).rsplit(".", 1)[0]
    assert access.read(f"{admin_payload}.{signature}") is None  # grant swapped, old signature
    assert access.read(payload) is None
    assert access.read("") is None and access.read(None) is None
    other = DashboardAccess(access.authority, secret=b"x" * 32, now=clock)
    assert other.read(cookie) is None  # another process's key (a restart signs out)
    clock.t += 13 * 3600
    assert access.read(cookie) is None


def test_a_removed_grant_ends_its_sessions(access: DashboardAccess, clock: Clock):
    visitor = access.sign_in(ALPHA.token)
    assert visitor is not None
    narrower = DashboardAccess(TokenAuthority((ADMIN,)), secret=b"k" * 32, now=clock)
    assert narrower.read(access.cookie(visitor)) is None


def test_without_tokens_everyone_is_a_full_access_local_visitor(clock: Clock):
    access = DashboardAccess(None, secret=b"k" * 32, now=clock)
    visitor = access.new_session()
    assert visitor.signed_in and visitor.may_change and visitor.may_see("anything")
    assert access.read(access.cookie(visitor)) == visitor
    assert access.from_bearer("whatever-token-0123456", None) is None


def test_an_anonymous_session_may_do_nothing(access: DashboardAccess):
    visitor = access.new_session()
    assert not visitor.signed_in and not visitor.may_see("alpha") and not visitor.may_change
    back = access.read(access.cookie(visitor))
    assert isinstance(back, Visitor) and back.csrf == visitor.csrf and back.name is None


def test_the_age_chart_colours_days_by_their_tier():
    policy = TierPolicy()
    assert tier_of_day(0, policy) is Tier.RECENT
    assert tier_of_day(1, policy) is Tier.ARCHIVED
    assert tier_of_day(29, policy) is Tier.ARCHIVED
    assert tier_of_day(30, policy) is Tier.EXPIRED
    bars = age_bars({0: 9, 1: 0, 2: 1}, policy)
    assert [b.count for b in bars] == [9, 0, 1] and bars[-1].last
    assert bars[1].height == 0 and bars[0].height > bars[2].height > 0
    assert age_bars({}, policy) == []
    bands = tier_bands({Tier.ACTIVE: 1, Tier.RECENT: 0, Tier.ARCHIVED: 3, Tier.EXPIRED: 0})
    assert [(b.tier, b.count) for b in bands] == [(Tier.ACTIVE, 1), (Tier.ARCHIVED, 3)]
    assert bands[1].x == bands[0].width and bands[0].width + bands[1].width == pytest.approx(720)
    assert tier_bands(dict.fromkeys(Tier, 0)) == []


def test_failures_are_throttled_per_client_and_forgotten_after_the_window(clock: Clock):
    throttle = AuthThrottle(limit=3, window_s=60, max_clients=2, clock=clock)
    for _ in range(3):
        assert throttle.wait_s("10.0.0.1") == 0
        throttle.failed("10.0.0.1")
    assert throttle.wait_s("10.0.0.1") == 60
    assert throttle.wait_s("10.0.0.2") == 0  # another client is not held back
    clock.t += 45
    assert throttle.wait_s("10.0.0.1") == 15
    clock.t += 15
    assert throttle.wait_s("10.0.0.1") == 0  # the failures left the window
    # Failures leave by age only: nothing else clears them (a success included).
    throttle.failed("10.0.0.1")
    clock.t += 30
    throttle.failed("10.0.0.1")
    throttle.failed("10.0.0.1")
    assert throttle.wait_s("10.0.0.1") == 30  # until the first of these is 60 s old
    # Bounded: a flood of addresses drops the least recently failed.
    for n in range(3, 10):
        throttle.failed(f"10.0.0.{n}")
    assert len(throttle._failures) == 2
