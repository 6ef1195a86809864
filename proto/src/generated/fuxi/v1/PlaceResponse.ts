// Original file: proto/fuxi/v1/scheduler.proto

import type { PlacementRejection as _fuxi_v1_PlacementRejection, PlacementRejection__Output as _fuxi_v1_PlacementRejection__Output } from '../../fuxi/v1/PlacementRejection.js';

export interface PlaceResponse {
  /**
   * How many placements were applied (the others are in `rejected`).
   */
  'applied'?: (number);
  'rejected'?: (_fuxi_v1_PlacementRejection)[];
}

export interface PlaceResponse__Output {
  /**
   * How many placements were applied (the others are in `rejected`).
   */
  'applied': (number);
  'rejected': (_fuxi_v1_PlacementRejection__Output)[];
}
