/**
 * The simulated device network. Loopback plays the operator's mobile network: every browser on this
 * machine reaches the gateway from 127.0.0.1 or ::1, so the "operator edge" below decides which line (or
 * which WiFi) the request comes from, from a cookie the visitor picks on the gateway's device page.
 *
 * In a real network the edge is the operator's proxy (PGW/UPF, CGNAT) and it knows the device's address;
 * here it writes that address into X-Forwarded-For, overwriting whatever the client sent, and the gateway
 * trusts X-Forwarded-For from loopback only (`trust proxy` = loopback), exactly as it would trust its edge.
 */
import type { RequestHandler } from 'express';
import type { DemoConfig, DemoSubscriber } from './config.js';
import { cookies } from './csrf.js';
import { spacedNumber } from './pages.js';

/** Cookie on the gateway's host: which simulated device this browser is. */
export const DEVICE_COOKIE = 'demo_device';
export const WIFI = 'wifi';

export interface SimulatedDevice {
  /** `line:<subscriber id>` or `wifi`. */
  id: string;
  label: string;
  /** The address the operator edge reports for it. */
  address: string;
  mobile: boolean;
  subscriber?: DemoSubscriber;
}

/** Every line with an address, then WiFi. */
export function simulatedDevices(config: DemoConfig): SimulatedDevice[] {
  const lines = config.subscribers
    .filter((s) => (s.addresses ?? []).length > 0)
    .map((s) => ({
      id: `line:${s.id}`,
      label: `${s.name ? `${s.name}'s phone` : 'Phone'}, line ${spacedNumber(s.phoneNumber)}`,
      address: s.addresses![0]!,
      mobile: true,
      subscriber: s,
    }));
  return [
    ...lines,
    { id: WIFI, label: 'A phone on WiFi (not the mobile network)', address: config.network.wifiAddress, mobile: false },
  ];
}

/** The device a cookie names; the first line by default (or WiFi when no line has an address). */
export function findDevice(config: DemoConfig, id: string | undefined): SimulatedDevice {
  const devices = simulatedDevices(config);
  return devices.find((d) => d.id === id) ?? devices[0]!;
}

/** Gateway middleware, before the router: the device's address in X-Forwarded-For, whatever the client sent. */
export function operatorEdge(config: DemoConfig): RequestHandler {
  return (req, _res, next) => {
    req.headers['x-forwarded-for'] = findDevice(config, cookies(req)[DEVICE_COOKIE]).address;
    next();
  };
}
