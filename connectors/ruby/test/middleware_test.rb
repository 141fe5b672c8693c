# frozen_string_literal: true

# The Rack middleware against a real anteroom node. Run by go test
# ./connectors (TestRubyMiddleware), which starts the node, admits users
# through real joins, and passes their tokens and the node's URL in the
# environment; CONTROL_URL rotates the node's signing keys on request.
require "minitest/autorun"
require "net/http"
require "openssl"
require "socket"
require "stringio"
require "anteroom/admission"

def env!(name)
  ENV.fetch(name) { raise "#{name} is not set: run these tests through go test ./connectors" }
end

ROOM, EVENT = env!("ANTEROOM_URL"), env!("ANTEROOM_EVENT")
ISSUER, AUDIENCE = env!("ANTEROOM_ISSUER"), env!("ANTEROOM_AUDIENCE")
GENUINE, USER, CONTROL = env!("TOKEN_GENUINE"), env!("TOKEN_USER"), env!("CONTROL_URL")
KID = JSON.parse(Base64.urlsafe_decode64(GENUINE.split(".").first))["kid"]

# A proxy in front of the node's JWKS that counts fetches and can be down.
class JWKSProxy
  attr_accessor :hits, :down
  attr_reader :url

  def initialize
    @hits, @down = 0, false
    @server = TCPServer.new("127.0.0.1", 0)
    @url = "http://127.0.0.1:#{@server.addr[1]}#{Anteroom::JWKS_PATH}"
    @thread = Thread.new { loop { serve(@server.accept) } }
  end

  def serve(conn)
    while (line = conn.gets) && line != "\r\n"; end
    @hits += 1
    status, body = @down ? [503, ""] : [200, Net::HTTP.get(URI(ROOM + Anteroom::JWKS_PATH))]
    conn.write("HTTP/1.1 #{status} X\r\nContent-Type: application/json\r\nContent-Length: #{body.bytesize}\r\nConnection: close\r\n\r\n#{body}")
  ensure
    conn&.close
  end

  def close
    @thread.kill
    @server.close
  end
end

def b64(v) = Base64.urlsafe_encode64(v.is_a?(String) ? v : JSON.generate(v), padding: false)

def hs256(secret)
  signing = "#{b64({ "alg" => "HS256", "kid" => KID, "typ" => "JWT" })}.#{GENUINE.split(".")[1]}"
  "#{signing}.#{b64(OpenSSL::HMAC.digest("SHA256", secret, signing))}"
end

# The SPKI PEM of the raw Ed25519 public key x.
def pem(x)
  der = ["302a300506032b6570032100"].pack("H*") + x
  "-----BEGIN PUBLIC KEY-----\n#{Base64.strict_encode64(der)}\n-----END PUBLIC KEY-----\n"
end

def cookie(tok) = { "HTTP_COOKIE" => "other=1; anteroom_a_#{EVENT}=#{tok}" }
def bearer(tok) = { "HTTP_AUTHORIZATION" => "Bearer #{tok}" }

# A Rack app behind the middleware; seen records who reached it.
class Shop
  attr_reader :seen, :log

  def initialize(**settings)
    @seen, @log = [], StringIO.new
    app = lambda do |env|
      @seen << env["anteroom.user"]
      [200, { "content-type" => "text/plain" }, ["shop as #{env["anteroom.admission"].user}"]]
    end
    @mw = Anteroom::RackAdmission.new(app, room_url: ROOM, event: EVENT, issuer: ISSUER, audience: AUDIENCE,
                                           logger: Logger.new(@log), **settings)
  end

  def get(path = "/drop/item", query = "", headers = {})
    env = { "REQUEST_METHOD" => "GET", "SCRIPT_NAME" => "", "PATH_INFO" => path, "QUERY_STRING" => query,
            "SERVER_NAME" => "shop.example", "SERVER_PORT" => "80", "rack.url_scheme" => "http",
            "rack.input" => StringIO.new("") }.merge(headers)
    status, hdrs, body = @mw.call(env)
    text = +""
    body.each { |s| text << s }
    body.close if body.respond_to?(:close)
    [status, hdrs, text]
  end
end

def sign_with_other(claims, header)
  JWT.encode(claims, RbNaCl::Signatures::Ed25519::SigningKey.generate, "EdDSA", header)
end

# A token signed by a new key that its header embeds (jwk), under the node's kid.
def embedded_jwk(claims)
  k = RbNaCl::Signatures::Ed25519::SigningKey.generate
  jwk = { "kty" => "OKP", "crv" => "Ed25519", "x" => b64(k.verify_key.to_bytes) }
  JWT.encode(claims, k, "EdDSA", { "kid" => KID, "jwk" => jwk })
end

class MiddlewareTest < Minitest::Test
  i_suck_and_my_tests_are_order_dependent!

  JWKS = JWKSProxy.new
  SHOP = Shop.new(jwks_url: JWKS.url, min_refetch: 1)
  Minitest.after_run { JWKS.close }

  def test_00_settings_are_checked
    [{ room_url: "", event: EVENT }, { room_url: ROOM, event: "../x" },
     { room_url: ROOM, event: EVENT, jwks_url: "file:///etc/passwd" }].each do |bad|
      assert_raises(ArgumentError, bad.inspect) { Anteroom::Verifier.new(**bad) }
    end
  end

  def test_01_safe_return
    ["/", "/drop/item?a=1"].each { |ok| assert Anteroom.safe_return?(ok), ok }
    ["", "//evil.example/", "/\\evil.example", "https://evil.example/", "drop", "/a\nb", "/" + "a" * 2048].each do |bad|
      refute Anteroom.safe_return?(bad), bad.inspect
    end
  end

  def test_02_genuine_passes_as_its_user_keys_fetched_once
    before = JWKS.hits
    [cookie(GENUINE), bearer(GENUINE), cookie(GENUINE)].each do |h|
      status, _, body = SHOP.get("/drop/item", "", h)
      assert_equal [200, "shop as #{USER}"], [status, body]
    end
    assert_equal 1, JWKS.hits - before, "three admitted requests fetch the key set once"
    assert_equal 200, SHOP.get("/drop/item", "", cookie("junk").merge(bearer(GENUINE)))[0], "a bad cookie hides no good bearer"
  end

  def test_03_no_token_redirects_with_a_safe_return
    status, h, = SHOP.get("/drop/item", "a=1&b=2")
    assert_equal [302, "#{ROOM}/e/#{EVENT}?return=%2Fdrop%2Fitem%3Fa%3D1%26b%3D2", "no-store"], [status, h["location"], h["cache-control"]]
    status, h, = SHOP.get("//evil.example/x")
    assert_equal [302, "#{ROOM}/e/#{EVENT}"], [status, h["location"]], "another site is never a return address"
  end

  def test_04_forged_expired_other_event_alg_none_HS256_with_the_public_key_redirect
    jwk = JSON.parse(Net::HTTP.get(URI(ROOM + Anteroom::JWKS_PATH)))["keys"].find { |k| k["kid"] == KID }
    claims, = JWT.decode(GENUINE, nil, false)
    h64, p64, s64 = GENUINE.split(".")
    bad = {
      "forged signature" => sign_with_other(claims, { "kid" => KID }),
      "tampered claims" => "#{h64}.#{b64(claims.merge("sub" => "mallory"))}.#{s64}",
      "signed by the key it embeds (jwk header)" => embedded_jwk(claims),
      "expired" => env!("TOKEN_EXPIRED"),
      "another event's" => env!("TOKEN_OTHER_EVENT"),
      "another audience's" => env!("TOKEN_OTHER_AUDIENCE"),
      "alg none" => "#{b64({ "alg" => "none", "kid" => KID, "typ" => "JWT" })}.#{p64}.",
      "alg none, no kid" => "#{b64({ "alg" => "none" })}.#{p64}.",
      "HS256 keyed with the public key's bytes" => hs256(Base64.urlsafe_decode64(jwk["x"])),
      "HS256 keyed with its x" => hs256(jwk["x"]),
      "HS256 keyed with its JWK" => hs256(JSON.generate(jwk)),
      "HS256 keyed with its PEM" => hs256(pem(Base64.urlsafe_decode64(jwk["x"]))),
      "no kid" => sign_with_other(claims, {}),
      "not a JWT" => "a.b.c",
    }
    before = SHOP.seen.dup
    bad.each do |what, tok|
      [cookie(tok), bearer(tok)].each do |h|
        status, hdrs, = SHOP.get("/drop/item", "", h)
        assert_equal 302, status, what
        assert_match %r{\A#{Regexp.escape(ROOM)}/e/#{EVENT}\?return=}, hdrs["location"], what
      end
    end
    assert_equal before, SHOP.seen, "no refused token reached the shop"
  end

  def test_05_unknown_kids_refetch_at_a_bounded_pace
    claims, = JWT.decode(GENUINE, nil, false)
    sleep 1.1 # past the last fetch's min_refetch
    before, t0 = JWKS.hits, Time.now
    20.times do |i|
      assert_equal 302, SHOP.get("/drop/item", "", bearer(sign_with_other(claims, { "kid" => "made-up-#{i}" })))[0]
    end
    most = 1 + (Time.now - t0).floor
    got = JWKS.hits - before
    assert (1..most).cover?(got), "20 unknown kids fetched #{got} times, want 1..#{most}"
  end

  def test_06_key_rotation_is_picked_up
    resp = Net::HTTP.post(URI("#{CONTROL}/rotate"), "")
    assert_equal "200", resp.code, resp.body
    rot = JSON.parse(resp.body)
    refute_equal KID, JSON.parse(Base64.urlsafe_decode64(rot["token"].split(".").first))["kid"], "the node signs with a new key"
    deadline = Time.now + 10
    got = nil
    loop do
      got = SHOP.get("/drop/item", "", cookie(rot["token"]))
      break if got[0] == 200 || Time.now > deadline

      sleep 0.2
    end
    assert_equal [200, "shop as #{rot["user"]}"], [got[0], got[2]]
    assert_equal 200, SHOP.get("/drop/item", "", cookie(GENUINE))[0], "the old key's tokens still pass"
  end

  def test_07_jwks_down_while_fresh_cache_serves
    JWKS.down = true
    assert_equal 200, SHOP.get("/drop/item", "", cookie(GENUINE))[0]
  ensure
    JWKS.down = false
  end

  def test_08_jwks_unreachable_no_cached_key_fails_closed
    s = TCPServer.new("127.0.0.1", 0)
    closed = "http://127.0.0.1:#{s.addr[1]}#{Anteroom::JWKS_PATH}"
    s.close
    [closed, JWKS.url].each do |url|
      JWKS.down = url == JWKS.url
      shop = Shop.new(jwks_url: url)
      status, hdrs, = shop.get("/drop/item", "", cookie(GENUINE))
      assert_equal [503, "no-store"], [status, hdrs["cache-control"]], url
      assert_empty shop.seen
      assert_match(/failing closed: anteroom: admission keys from http/, shop.log.string)
      assert_equal 302, shop.get[0], "no token needs no key"
    end
  ensure
    JWKS.down = false
  end

  def test_09_stale_keys_that_cannot_be_renewed_fail_closed
    clock = [Process.clock_gettime(Process::CLOCK_MONOTONIC)]
    shop = Shop.new(jwks_url: JWKS.url, refresh: 60, clock: -> { clock[0] })
    assert_equal 200, shop.get("/drop/item", "", cookie(GENUINE))[0]
    JWKS.down = true
    clock[0] += 61
    assert_equal 503, shop.get("/drop/item", "", cookie(GENUINE))[0]
    JWKS.down = false
    clock[0] += 6 # past min_refetch: renewed
    assert_equal 200, shop.get("/drop/item", "", cookie(GENUINE))[0]
  ensure
    JWKS.down = false
  end
end
