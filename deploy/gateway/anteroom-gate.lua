-- anteroom's gate for HAProxy (2.6, built with Lua: Debian's haproxy is).
-- haproxy.cfg beside this file loads it with lua-load and runs it as
--   http-request lua.anteroom_gate <gate URL>
-- on each request to a protected URL; internal/node TestHAProxyGate runs
-- both files as written against a real node.
--
-- It asks the node's gate (GET /events/{id}/gate) with haproxy's own HTTP
-- client (core.httpclient, HAProxy >= 2.5: no Lua library to install),
-- passing the client's headers (its cookie or bearer admission token, what
-- the door's rules see) without the identity headers a client could forge,
-- and names the request it protects in X-Original-URI and
-- X-Original-Method. It only records the answer in four variables, which
-- haproxy.cfg's http-request rules act on:
--   txn.anteroom_status    the gate's status: 204 admitted, 401 to the
--                          waiting room, 403 refused by the door; 0 when
--                          the gate could not be asked (fail closed)
--   txn.anteroom_user      X-Anteroom-User of a 204 (the token's sub)
--   txn.anteroom_redirect  X-Anteroom-Redirect of a 401 (the waiting page)
--   txn.anteroom_cookie    Set-Cookie of a 204, when there is one: a
--                          safety-net room's gate admitting a visitor at
--                          once or renewing an admission (for the browser)

-- Request headers never passed to the gate: the client's claims about
-- who it is or which request it made, and the framing of a body the gate
-- does not get.
local dropped = {
	["x-user-id"] = true,
	["x-original-uri"] = true,
	["x-original-method"] = true,
	["x-forwarded-for"] = true,
	["content-length"] = true,
	["transfer-encoding"] = true,
	["connection"] = true,
	["expect"] = true,
}

-- timeout_ms bounds each attempt of the gate call. haproxy 2.6's HTTP
-- client makes up to four (it retries three times, which 2.6 cannot
-- change), so a gate that hangs fails closed after about 5 s, as nginx's
-- does; a refused connection after about 3 s.
local timeout_ms = 1250

-- first returns the first value of header name in an httpclient answer's
-- headers (lower-case names, values indexed from 0), or nil.
local function first(headers, name)
	local values = headers and headers[name]
	return values and values[0]
end

core.register_action("anteroom_gate", { "http-req" }, function(txn, gate)
	txn:set_var("txn.anteroom_status", 0)
	local headers = {}
	for name, values in pairs(txn.http:req_get_headers()) do
		if not dropped[name] then
			local list = {}
			for i = 0, #values do
				list[#list + 1] = values[i]
			end
			headers[name] = list
		end
	end
	headers["x-original-uri"] = { txn.sf:pathq() }
	headers["x-original-method"] = { txn.sf:method() }
	headers["x-forwarded-for"] = { txn.sf:src() }

	local ok, res = pcall(function()
		return core.httpclient():get({ url = gate, headers = headers, timeout = timeout_ms })
	end)
	if not ok or type(res) ~= "table" or not res.status then
		return -- status 0: haproxy.cfg answers 503
	end
	txn:set_var("txn.anteroom_status", res.status)
	if res.status == 204 then
		txn:set_var("txn.anteroom_user", first(res.headers, "x-anteroom-user") or "")
		local cookie = first(res.headers, "set-cookie")
		if cookie then
			txn:set_var("txn.anteroom_cookie", cookie)
		end
	elseif res.status == 401 then
		txn:set_var("txn.anteroom_redirect", first(res.headers, "x-anteroom-redirect") or "")
	end
end, 1)
