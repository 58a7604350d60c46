# Sourced by the Tests/support/*.sh scripts that listen on a fixed port.
#
# Their default ports lie below 32768, outside Linux's default ephemeral range (32768-60999): a
# fixed port inside it can be handed out by the kernel as the local port of an outgoing
# connection -- radosgw's own connections to its monitor and OSD included -- and the server then
# fails to bind with "Address already in use" (CI did, twice in one run, with 47480).

# Exit 1 with a message naming the port and the variable that moves it when something on this
# machine already listens on 127.0.0.1:PORT, or when PORT lies in the kernel's ephemeral range.
#   need_free_port NAME PORT VARIABLE
need_free_port() {
    local name="$1" port="$2" variable="$3" low high
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
        printf '%s: port %s on 127.0.0.1 is taken by another program; choose another with %s=PORT\n' \
            "$name" "$port" "$variable" >&2
        return 1
    fi
    read -r low high < /proc/sys/net/ipv4/ip_local_port_range
    if (( port >= low && port <= high )); then
        printf '%s: port %s lies in the kernel'"'"'s ephemeral range %s-%s, where an outgoing connection can take it; choose another with %s=PORT\n' \
            "$name" "$port" "$low" "$high" "$variable" >&2
        return 1
    fi
}
