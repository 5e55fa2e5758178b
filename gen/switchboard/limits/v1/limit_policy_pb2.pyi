import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class LimitScopeKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    LIMIT_SCOPE_KIND_UNSPECIFIED: _ClassVar[LimitScopeKind]
    LIMIT_SCOPE_KIND_TENANT: _ClassVar[LimitScopeKind]
    LIMIT_SCOPE_KIND_SERVICE_ACCOUNT: _ClassVar[LimitScopeKind]
    LIMIT_SCOPE_KIND_API_KEY: _ClassVar[LimitScopeKind]
    LIMIT_SCOPE_KIND_MODEL: _ClassVar[LimitScopeKind]

class LimitTier(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    LIMIT_TIER_UNSPECIFIED: _ClassVar[LimitTier]
    LIMIT_TIER_PLATFORM: _ClassVar[LimitTier]
    LIMIT_TIER_TENANT: _ClassVar[LimitTier]

class BudgetPeriod(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    BUDGET_PERIOD_UNSPECIFIED: _ClassVar[BudgetPeriod]
    BUDGET_PERIOD_DAY: _ClassVar[BudgetPeriod]
    BUDGET_PERIOD_WEEK: _ClassVar[BudgetPeriod]
    BUDGET_PERIOD_MONTH: _ClassVar[BudgetPeriod]

class LimitMetric(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    LIMIT_METRIC_UNSPECIFIED: _ClassVar[LimitMetric]
    LIMIT_METRIC_REQUESTS_PER_MINUTE: _ClassVar[LimitMetric]
    LIMIT_METRIC_TOKENS_PER_MINUTE: _ClassVar[LimitMetric]
    LIMIT_METRIC_CONCURRENT_REQUESTS: _ClassVar[LimitMetric]
    LIMIT_METRIC_TOKEN_BUDGET: _ClassVar[LimitMetric]
LIMIT_SCOPE_KIND_UNSPECIFIED: LimitScopeKind
LIMIT_SCOPE_KIND_TENANT: LimitScopeKind
LIMIT_SCOPE_KIND_SERVICE_ACCOUNT: LimitScopeKind
LIMIT_SCOPE_KIND_API_KEY: LimitScopeKind
LIMIT_SCOPE_KIND_MODEL: LimitScopeKind
LIMIT_TIER_UNSPECIFIED: LimitTier
LIMIT_TIER_PLATFORM: LimitTier
LIMIT_TIER_TENANT: LimitTier
BUDGET_PERIOD_UNSPECIFIED: BudgetPeriod
BUDGET_PERIOD_DAY: BudgetPeriod
BUDGET_PERIOD_WEEK: BudgetPeriod
BUDGET_PERIOD_MONTH: BudgetPeriod
LIMIT_METRIC_UNSPECIFIED: LimitMetric
LIMIT_METRIC_REQUESTS_PER_MINUTE: LimitMetric
LIMIT_METRIC_TOKENS_PER_MINUTE: LimitMetric
LIMIT_METRIC_CONCURRENT_REQUESTS: LimitMetric
LIMIT_METRIC_TOKEN_BUDGET: LimitMetric

class LimitScope(_message.Message):
    __slots__ = ("kind", "id")
    KIND_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    kind: LimitScopeKind
    id: str
    def __init__(self, kind: _Optional[_Union[LimitScopeKind, str]] = ..., id: _Optional[str] = ...) -> None: ...

class Limits(_message.Message):
    __slots__ = ("requests_per_minute", "tokens_per_minute", "concurrent_requests", "token_budget", "budget_period", "soft_budget")
    REQUESTS_PER_MINUTE_FIELD_NUMBER: _ClassVar[int]
    TOKENS_PER_MINUTE_FIELD_NUMBER: _ClassVar[int]
    CONCURRENT_REQUESTS_FIELD_NUMBER: _ClassVar[int]
    TOKEN_BUDGET_FIELD_NUMBER: _ClassVar[int]
    BUDGET_PERIOD_FIELD_NUMBER: _ClassVar[int]
    SOFT_BUDGET_FIELD_NUMBER: _ClassVar[int]
    requests_per_minute: str
    tokens_per_minute: str
    concurrent_requests: str
    token_budget: str
    budget_period: BudgetPeriod
    soft_budget: str
    def __init__(self, requests_per_minute: _Optional[str] = ..., tokens_per_minute: _Optional[str] = ..., concurrent_requests: _Optional[str] = ..., token_budget: _Optional[str] = ..., budget_period: _Optional[_Union[BudgetPeriod, str]] = ..., soft_budget: _Optional[str] = ...) -> None: ...

class LimitPolicy(_message.Message):
    __slots__ = ("tenant_id", "tier", "scope", "limits", "update_time")
    TENANT_ID_FIELD_NUMBER: _ClassVar[int]
    TIER_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    LIMITS_FIELD_NUMBER: _ClassVar[int]
    UPDATE_TIME_FIELD_NUMBER: _ClassVar[int]
    tenant_id: str
    tier: LimitTier
    scope: LimitScope
    limits: Limits
    update_time: _timestamp_pb2.Timestamp
    def __init__(self, tenant_id: _Optional[str] = ..., tier: _Optional[_Union[LimitTier, str]] = ..., scope: _Optional[_Union[LimitScope, _Mapping]] = ..., limits: _Optional[_Union[Limits, _Mapping]] = ..., update_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class LimitUsage(_message.Message):
    __slots__ = ("tier", "scope", "metric", "limit", "used", "remaining", "reset_time", "budget_period", "soft_limit", "soft_limit_crossed_time")
    TIER_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    METRIC_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    USED_FIELD_NUMBER: _ClassVar[int]
    REMAINING_FIELD_NUMBER: _ClassVar[int]
    RESET_TIME_FIELD_NUMBER: _ClassVar[int]
    BUDGET_PERIOD_FIELD_NUMBER: _ClassVar[int]
    SOFT_LIMIT_FIELD_NUMBER: _ClassVar[int]
    SOFT_LIMIT_CROSSED_TIME_FIELD_NUMBER: _ClassVar[int]
    tier: LimitTier
    scope: LimitScope
    metric: LimitMetric
    limit: int
    used: int
    remaining: int
    reset_time: _timestamp_pb2.Timestamp
    budget_period: BudgetPeriod
    soft_limit: int
    soft_limit_crossed_time: _timestamp_pb2.Timestamp
    def __init__(self, tier: _Optional[_Union[LimitTier, str]] = ..., scope: _Optional[_Union[LimitScope, _Mapping]] = ..., metric: _Optional[_Union[LimitMetric, str]] = ..., limit: _Optional[int] = ..., used: _Optional[int] = ..., remaining: _Optional[int] = ..., reset_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., budget_period: _Optional[_Union[BudgetPeriod, str]] = ..., soft_limit: _Optional[int] = ..., soft_limit_crossed_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...
