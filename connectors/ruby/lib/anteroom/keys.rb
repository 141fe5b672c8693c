# frozen_string_literal: true

require "json"
require "net/http"
require "rbnacl"
require "uri"

module Anteroom
  # A verification that failed closed: the key set could not be fetched or
  # read, and no cached key fits. No token is accepted without keys; the
  # middleware answers 503 rather than send an admitted visitor back to the
  # room.
  class KeysUnavailable < StandardError
    def initialize(url, cause)
      super("anteroom: admission keys from #{url}: #{cause}")
    end
  end

  # The node's JWKS, fetched and cached as the Go client.Verifier does it
  # (client/verifier.go is the reference): fetched on first use and kept
  # for refresh seconds. A kid not in the cache fetches it again (a
  # rotation), at most once per min_refetch seconds, so tokens of made-up
  # kids cannot make it hammer the node. When the set cannot be fetched and
  # none is cached, or the cached one is older than refresh and cannot be
  # renewed, #get raises KeysUnavailable. Thread-safe: a fetch runs for one
  # caller while the others wait for it. Only Ed25519 (OKP) keys are kept.
  class Keys
    MAX_BODY = 1 << 20

    def initialize(url, refresh: 300.0, min_refetch: 5.0, timeout: 10.0, clock: -> { Process.clock_gettime(Process::CLOCK_MONOTONIC) })
      @uri = URI(url)
      @url, @refresh, @min_refetch, @timeout, @clock = url, refresh, min_refetch, timeout, clock
      @mutex = Mutex.new
      @keys = nil
      @fetched_at = 0.0
      @tried_at = nil
      @last_err = nil
    end

    # The verify key of kid, nil when the key set has none (refuse the
    # token), or KeysUnavailable.
    def get(kid)
      @mutex.synchronize do
        now = @clock.call
        fresh = !@keys.nil? && now - @fetched_at < @refresh
        return @keys[kid] if fresh && @keys.key?(kid)
        if !@tried_at.nil? && now - @tried_at < @min_refetch
          return nil if fresh # an unknown kid again, too soon: the cache answers
          raise KeysUnavailable.new(@url, @last_err) unless @last_err.nil?
        end
        begin
          fetch_locked(now)
        rescue KeysUnavailable
          return nil if fresh # the cached set still stands
          raise
        end
        @keys[kid]
      end
    end

    private

    def fetch_locked(now)
      keys = {}
      begin
        http = Net::HTTP.new(@uri.host, @uri.port)
        http.use_ssl = @uri.scheme == "https"
        http.open_timeout = http.read_timeout = @timeout
        resp = http.request(Net::HTTP::Get.new(@uri, "Accept" => "application/json"))
        raise "status #{resp.code}" unless resp.code == "200"
        body = resp.body.to_s
        raise "key set over 1 MiB" if body.bytesize > MAX_BODY
        Array(JSON.parse(body)["keys"]).each do |jwk|
          next unless jwk.is_a?(Hash) && jwk["kty"] == "OKP" && jwk["crv"] == "Ed25519"
          next unless jwk.fetch("alg", "EdDSA") == "EdDSA" && jwk.fetch("use", "sig") == "sig"
          next unless jwk["kid"].is_a?(String) && jwk["x"].is_a?(String)
          keys[jwk["kid"]] = RbNaCl::Signatures::Ed25519::VerifyKey.new(Base64.urlsafe_decode64(jwk["x"]))
        end
        raise "no Ed25519 key in the set" if keys.empty?
      rescue StandardError => e # any failure to get keys fails closed
        @tried_at, @last_err = now, e
        raise KeysUnavailable.new(@url, e)
      end
      @keys, @fetched_at, @tried_at, @last_err = keys, now, now, nil
    end
  end
end
