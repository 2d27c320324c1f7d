/**
 * The offline demo's servers, all on 127.0.0.1: a target site with its own per-client rate limit
 * ({@link io.tokenbucket.example.demo.DemoTarget}) and real HTTP forward proxies built on Jetty's proxy module
 * ({@link io.tokenbucket.example.demo.DemoProxy}), put together by {@link io.tokenbucket.example.demo.DemoSite}.
 * The tests use the same servers.
 */
package io.tokenbucket.example.demo;
