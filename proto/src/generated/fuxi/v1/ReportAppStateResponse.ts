// Original file: proto/fuxi/v1/master.proto

import type { Long } from '@grpc/proto-loader';

export interface ReportAppStateResponse {
  'epoch'?: (number | string | Long);
}

export interface ReportAppStateResponse__Output {
  'epoch': (string);
}
