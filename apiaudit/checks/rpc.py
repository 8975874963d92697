"""String RPCs (`collective_rpc("name")`) must name a method that exists where they run."""

from __future__ import annotations

from apiaudit.checks.context import CheckContext
from apiaudit.consumer.records import ConsumerFile, RpcCall
from apiaudit.evidence import RpcFacts
from apiaudit.findings import Finding, Severity
from apiaudit.provider.records import Found, Unknown


def check_rpc(ctx: CheckContext, file: ConsumerFile, call: RpcCall) -> list[Finding]:
    hosts = ctx.hosts.rpc_hosts.get(call.method, ())
    if not hosts:
        return []
    if call.name is None:
        return [
            ctx.finding(
                file, call.site, "cannot-judge", f"cannot judge {call.method}(...): the method name is not a string literal", severity=Severity.INFO
            )
        ]
    # `self.collective_rpc(...)` on a consumer class that overrides the method: the consumer's
    # own override takes the call, and where it sends it is the consumer's business.
    if call.receiver is not None and call.method in ctx.own_members(call.receiver):
        return []
    # Methods of consumer classes mixed into the hosts run there too.
    for extension, targets in ctx.injected.items():
        if set(targets) & set(hosts) and call.name in ctx.own_members(extension):
            return []
    unknown = None
    for host in hosts:
        res = ctx.index.class_member(host, call.name, instance=True)
        if isinstance(res, Found):
            return []
        if isinstance(res, Unknown):
            unknown = res
    if unknown is not None or set(hosts) & ctx.unknown_injection_hosts:
        reason = unknown.reason if unknown else "a class injected into the host is named by a value the engine cannot resolve"
        return [
            ctx.finding(
                file, call.site, "cannot-judge", f"cannot judge RPC '{call.name}': {reason}", callee=f"{hosts[0]}.{call.name}", severity=Severity.INFO
            )
        ]
    for extension, (targets, refusal) in sorted(ctx.injected_behind.items()):
        if targets & set(hosts) and call.name in ctx.own_members(extension):
            # The consumer installs the class that has it only after its own refusal of this
            # release: the break is that refusal (reported there); this call runs only on an
            # engine built some other way.
            return [
                ctx.finding(
                    file, call.site, "rpc-missing",
                    f"{call.method}('{call.name}'): no method '{call.name}' on {hosts[0]}; {extension} has it, but the consumer "
                    f"installs it only after {refusal}, which raises on this release first",
                    callee=f"{hosts[0]}.{call.name}", facts=RpcFacts(call.name), severity=Severity.WARNING,
                )  # fmt: skip
            ]
    where = " or ".join([hosts[0]] + sorted(ctx.injected))
    return [
        ctx.finding(
            file,
            call.site,
            "rpc-missing",
            f"{call.method}('{call.name}'): no method '{call.name}' on {where}",
            callee=f"{hosts[0]}.{call.name}",
            facts=RpcFacts(call.name),
        )
    ]
