// Original file: proto/fuxi/v1/scheduler.proto

import type { SlotPlacement as _fuxi_v1_SlotPlacement, SlotPlacement__Output as _fuxi_v1_SlotPlacement__Output } from '../../fuxi/v1/SlotPlacement.js';
import type { Long } from '@grpc/proto-loader';

export interface PlaceRequest {
  'name'?: (string);
  'epoch'?: (number | string | Long);
  /**
   * The view version these placements were decided on.
   */
  'version'?: (number | string | Long);
  'placements'?: (_fuxi_v1_SlotPlacement)[];
}

export interface PlaceRequest__Output {
  'name': (string);
  'epoch': (string);
  /**
   * The view version these placements were decided on.
   */
  'version': (string);
  'placements': (_fuxi_v1_SlotPlacement__Output)[];
}
