# frozen_string_literal: true

require "base64"
require "erb"
require "jwt"
require "logger"
require_relative "keys"

# Anteroom holds the Rack middleware that lets a request through only with
# a valid anteroom admission token of one sale, verified offline with the
# node's published keys (JWKS). See README.md.
module Anteroom
  JWKS_PATH = "/.well-known/jwks.json"
  EVENT_ID = /\A[a-z0-9][a-z0-9_-]{0,63}\z/.freeze
  MAX_RETURN = 2048
  MAX_TOKEN = 8192

  # A token to refuse: forged, expired, not yet valid, another iss, aud or
  # event, another algorithm, an unknown key, malformed.
  class InvalidAdmission < StandardError; end

  # What a verified admission token says: user (its sub) may be on the
  # shop for event until expires_at; id is its jti.
  Admission = Struct.new(:user, :event, :expires_at, :id, keyword_init: true)

  # The cookie that holds the admission token of event, as the node sets
  # it (shopper.AdmissionCookie).
  def self.admission_cookie(event) = "anteroom_a_#{event}"

  # Whether p may be the waiting page's return address: a path on this
  # site ("/..."), never another site ("//host", "/\host", "https://..."),
  # without control characters (shopper.SafeReturn).
  def self.safe_return?(p)
    p.is_a?(String) && !p.empty? && p.bytesize <= MAX_RETURN && p.start_with?("/") && !p.start_with?("//") &&
      !p.include?("\\") && p !~ /[\x00-\x1f\x7f]/
  end

  # Checks admission tokens of one sale offline with the node's keys, as
  # the node does: the Ed25519 signature, alg EdDSA only, a kid of the key
  # set, iss, aud, exp, nbf and iat with leeway, the event, a sub.
  # Thread-safe.
  class Verifier
    attr_reader :room_url, :event

    # room_url: the node's public base URL (required); event: the sale's
    # id (required); jwks_url: default room_url + JWKS_PATH; issuer
    # (ANTEROOM_ISSUER, default "anteroom"); audience (ANTEROOM_AUDIENCE,
    # default "anteroom-claim"); leeway (5 s); refresh (300 s);
    # min_refetch (5 s); timeout (10 s).
    def initialize(room_url:, event:, jwks_url: nil, issuer: "anteroom", audience: "anteroom-claim", leeway: 5,
                   refresh: 300.0, min_refetch: 5.0, timeout: 10.0, clock: nil)
      raise ArgumentError, "anteroom: room_url must be the node's http(s) URL" unless room_url.is_a?(String) && room_url =~ %r{\Ahttps?://[^/]+}
      raise ArgumentError, "anteroom: event must be the sale's id" unless event.is_a?(String) && event =~ EVENT_ID

      @room_url, @event = room_url.sub(%r{/+\z}, ""), event
      jwks_url ||= @room_url + JWKS_PATH
      raise ArgumentError, "anteroom: jwks_url must be an http(s) URL" unless jwks_url =~ %r{\Ahttps?://}

      @issuer, @audience, @leeway = issuer, audience, [leeway.to_f, 0.0].max
      opts = { refresh: refresh, min_refetch: min_refetch, timeout: timeout }
      opts[:clock] = clock if clock
      @keys = Keys.new(jwks_url, **opts)
    end

    # The Admission raw carries; InvalidAdmission for a token to refuse;
    # KeysUnavailable when no key can be had (fail closed).
    def verify(raw)
      raise InvalidAdmission, "no token" unless raw.is_a?(String) && !raw.empty? && raw.bytesize <= MAX_TOKEN

      header = begin
        JSON.parse(Base64.urlsafe_decode64(raw.split(".", 2).first.to_s))
      rescue StandardError => e
        raise InvalidAdmission, "header: #{e.message}"
      end
      raise InvalidAdmission, "header is not an object" unless header.is_a?(Hash)
      # Never none, never HS256 keyed with the public key.
      raise InvalidAdmission, "signing method #{header["alg"].inspect} is invalid" unless header["alg"] == "EdDSA"
      raise InvalidAdmission, "crit header not supported" if header.key?("crit")
      kid = header["kid"]
      raise InvalidAdmission, "no kid" unless kid.is_a?(String) && !kid.empty?
      key = @keys.get(kid)
      raise InvalidAdmission, "unknown kid #{kid.inspect}" if key.nil?

      claims, = begin
        JWT.decode(raw, key, true, algorithm: "EdDSA", iss: @issuer, verify_iss: true, aud: @audience, verify_aud: true,
                                   leeway: @leeway, required_claims: %w[exp nbf iat iss aud sub])
      rescue JWT::DecodeError => e
        raise InvalidAdmission, e.message
      end
      # ruby-jwt 2.5 checks iat without leeway: with it here.
      raise InvalidAdmission, "token used before issued" unless claims["iat"].is_a?(Numeric) && claims["iat"] <= Time.now.to_f + @leeway
      raise InvalidAdmission, "another event's token" unless claims["event"] == @event
      raise InvalidAdmission, "no user" unless claims["sub"].is_a?(String) && !claims["sub"].empty?

      Admission.new(user: claims["sub"], event: @event, expires_at: Time.at(claims["exp"]).utc,
                    id: claims["jti"].is_a?(String) ? claims["jti"] : "")
    end

    # The Admission of the first of raws that verifies, or nil with the
    # KeysUnavailable that kept one from being checked, if any.
    def check(raws)
      unavailable = nil
      raws.each do |raw|
        return [verify(raw), nil]
      rescue InvalidAdmission
        next
      rescue KeysUnavailable => e
        unavailable = e
      end
      [nil, unavailable]
    end

    # The sale's waiting page, returning to ret when it is safe.
    def waiting_page(ret)
      page = "#{@room_url}/e/#{@event}"
      page += "?return=#{ERB::Util.url_encode(ret)}" if Anteroom.safe_return?(ret)
      page
    end
  end

  # Rack middleware: a request with an admission token of the sale that
  # verifies (the admission cookie first, then an Authorization bearer)
  # reaches the app with env["anteroom.admission"] (an Admission) and
  # env["anteroom.user"]. One with none, or none valid, is redirected (302,
  # no-store) to the sale's waiting page, returning to its path when that
  # is a path on this site. When the keys cannot be had and none cached
  # fits, it answers 503 and logs why: nothing passes unverified.
  #
  #   use Anteroom::RackAdmission, room_url: "https://queue.shop.example", event: "drop"
  class RackAdmission
    def initialize(app, verifier: nil, logger: Logger.new($stderr), **settings)
      @app, @logger = app, logger
      @verifier = verifier || Verifier.new(**settings)
    end

    def call(env)
      adm, unavailable = @verifier.check(candidates(env))
      if adm
        env["anteroom.admission"], env["anteroom.user"] = adm, adm.user
        return @app.call(env)
      end
      if unavailable
        @logger.error("anteroom: failing closed: #{unavailable.message}")
        return [503, { "content-type" => "text/plain; charset=utf-8", "cache-control" => "no-store", "retry-after" => "5" },
                ["admission cannot be checked now\n"]]
      end
      [302, { "location" => @verifier.waiting_page(request_uri(env)), "cache-control" => "no-store",
              "content-type" => "text/plain; charset=utf-8" }, []]
    end

    private

    def candidates(env)
      out = []
      name = Anteroom.admission_cookie(@verifier.event)
      env.fetch("HTTP_COOKIE", "").to_s.split(";").each do |part|
        k, v = part.split("=", 2)
        next unless v && k.strip == name

        out << v.strip unless v.strip.empty?
        break
      end
      auth = env.fetch("HTTP_AUTHORIZATION", "").to_s
      out << auth[7..].strip if auth[0, 7].casecmp?("bearer ") && !auth[7..].strip.empty?
      out
    end

    def request_uri(env)
      raw = env["REQUEST_URI"]
      return raw if raw.is_a?(String) && raw.start_with?("/")

      uri = "#{env["SCRIPT_NAME"]}#{env["PATH_INFO"]}"
      uri = "/" if uri.empty?
      qs = env["QUERY_STRING"].to_s
      qs.empty? ? uri : "#{uri}?#{qs}"
    end
  end
end
